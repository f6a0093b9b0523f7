package cliflags

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"spangle/shared/buildinfo"
)

// Command is what Parse needs from one command's configuration.
type Command struct {
	// Name is the command's name, as in its usage text and errors.
	Name string
	// Usage is the first line of the usage text.
	Usage string
	// Hidden names flags the usage text leaves out (tests only).
	Hidden []string
	// Bind registers every flag of the configuration on fs, each with
	// the configuration's current value as its default.
	Bind func(fs *flag.FlagSet)
	// Load resets the configuration to its defaults and reads the
	// --config file at path over them.
	Load func(path string) error
	// Check, if set, sees the flags given before the file is read, to
	// refuse a value with the flag's own name.
	Check func(fs *flag.FlagSet) error
}

// Parse reads a command line the way every spangle daemon does: the
// --config file (if given) over the defaults, then the flags given over
// the file. It adds --config and --version to cmd's flags. --help gives
// flag.ErrHelp and --version ErrVersion.
func Parse(args []string, out io.Writer, cmd Command) error {
	var path string
	var version bool
	bind := func(fs *flag.FlagSet) {
		fs.StringVar(&path, "config", "", "TOML file with the same keys as the flags, named in parentheses; flags given win over it")
		fs.BoolVar(&version, "version", false, "print the version, commit and Go release, and exit")
		cmd.Bind(fs)
	}
	fs := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
	fs.SetOutput(out)
	bind(fs)
	SetUsage(fs, cmd.Usage, cmd.Hidden...)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if version {
		return ErrVersion
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("config: unexpected arguments %q", fs.Args())
	}
	if cmd.Check != nil {
		if err := cmd.Check(fs); err != nil {
			return err
		}
	}
	if path == "" {
		return nil
	}
	if err := cmd.Load(path); err != nil {
		return err
	}
	// The flags given win over the file: parse them again over it.
	again := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
	again.SetOutput(io.Discard)
	bind(again)
	if err := again.Parse(args); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// ExitOnParseError ends a command whose command line gave err, as every
// spangle command does: --help exits 0 (the usage is printed), --version
// prints the build and exits 0, any other error is printed and exits 2.
// With err nil it returns.
func ExitOnParseError(name string, err error) {
	switch {
	case err == nil:
		return
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, ErrVersion):
		fmt.Println(name, buildinfo.Get())
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
}
