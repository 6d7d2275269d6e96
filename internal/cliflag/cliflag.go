// Package cliflag holds the flag handling that the repository's commands
// share (cmd/weft and the bench program): -h prints the usage to stdout
// and stops without an error, a bad flag or a left-over argument prints
// the usage to stderr and is an error naming the command.
package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Parse parses args with fs and reports whether the command should go on.
// Help goes to stdout (false, nil); a bad flag or a left-over argument
// prints the usage to stderr and returns the error, prefixed with fs's
// name.
func Parse(fs *flag.FlagSet, stdout, stderr io.Writer, args []string) (bool, error) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return false, nil
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fs.SetOutput(stderr)
		fs.Usage()
		return false, fmt.Errorf("%s: %w", fs.Name(), err)
	}
	return true, nil
}
