// Package canon holds the CBOR modes of Parley's signed records (room
// events, sync frames, agent cards, presence): core deterministic encoding,
// so each value has one encoding, and strict decoding that refuses anything
// a record never holds.
package canon

import "github.com/fxamacker/cbor/v2"

// Enc is CBOR core deterministic encoding (RFC 8949 §4.2.1).
var Enc = func() cbor.EncMode {
	m, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic("canon: cbor options: " + err.Error()) // constant options: a programming error
	}
	return m
}()

// StrictDec returns a decoder with no tags, no indefinite lengths, no
// duplicate or unknown keys, valid UTF-8 only, nesting of at most 4, maps of
// at most 16 pairs, and arrays of at most maxArray elements, so nothing
// large is allocated before the checks.
func StrictDec(maxArray int) cbor.DecMode {
	m, err := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		MaxNestedLevels:   4,
		MaxArrayElements:  maxArray,
		MaxMapPairs:       16,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		UTF8:              cbor.UTF8RejectInvalid,
		NaN:               cbor.NaNDecodeForbidden,
		Inf:               cbor.InfDecodeForbidden,
	}.DecMode()
	if err != nil {
		panic("canon: cbor options: " + err.Error()) // constant options: a programming error
	}
	return m
}
