package mcp

import (
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// portableSchema is the JSON schema of T with one type per node: Go's
// inference types slices, maps and pointers as ["null", X], which clients
// that map a schema to one type (Gemini's function declarations) reject.
// Parley's tools never send null: lists go out as [] and absent objects
// are left out (omitempty), so X alone is true of every output.
func portableSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %T: %v", *new(T), err))
	}
	singleTypes(s)
	return s
}

// singleTypes replaces every ["null", X] type in s with X.
func singleTypes(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		for _, t := range s.Types {
			if t != "null" {
				s.Type = t
			}
		}
		s.Types = nil
	}
	for _, c := range s.Properties {
		singleTypes(c)
	}
	for _, c := range s.Defs {
		singleTypes(c)
	}
	for _, list := range [][]*jsonschema.Schema{s.AnyOf, s.AllOf, s.OneOf, s.PrefixItems, s.ItemsArray} {
		for _, c := range list {
			singleTypes(c)
		}
	}
	singleTypes(s.Items)
	singleTypes(s.AdditionalProperties)
}
