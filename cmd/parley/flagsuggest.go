package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/parley-mesh/parley/internal/near"
)

// suggestFlags makes an unknown flag name the flags of its command it was
// near (`up --lisen`: --listen) and where the command's flags are listed;
// cobra says only "unknown flag: --lisen".
func suggestFlags(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		// A word before the flag that names none of the command's
		// commands (`board claim x.go --note …`) is the mistake to tell.
		if cmd.HasAvailableSubCommands() && cmd.Args != nil {
			if aerr := cmd.Args(cmd, cmd.Flags().Args()); errors.As(aerr, new(unknownCmd)) {
				return aerr
			}
		}
		name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
		if !ok {
			return err
		}
		help := fmt.Sprintf("`%s --help` lists its flags", cmd.CommandPath())
		var flags []string
		visit := func(f *pflag.Flag) {
			if !f.Hidden {
				flags = append(flags, f.Name)
			}
		}
		cmd.LocalFlags().VisitAll(visit)
		cmd.InheritedFlags().VisitAll(visit)
		if ws := near.Words(name, flags, 3); len(ws) > 0 {
			for i := range ws {
				ws[i] = "--" + ws[i]
			}
			return fmt.Errorf("%w (did you mean %s? %s)", err, strings.Join(ws, " or "), help)
		}
		return fmt.Errorf("%w (%s)", err, help)
	})
}
