package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// parseFlags parses args, which may mix flags and positional arguments
// (everything after "--" is positional), and returns the positional ones.
// It then fills every flag that the command line
// left unset from the environment: flag "peers" of a command whose prefix
// is "CELLAR_CHUBBY" reads CELLAR_CHUBBY_PEERS. The command line wins over
// the environment, which wins over a config file (flag -config, if the
// command has it; see config.go), which wins over the default. A bad value
// from the environment is reported with the variable's name.
func parseFlags(fs *flag.FlagSet, args []string, env Env, prefix string) ([]string, error) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage of cellar %s:\n", fs.Name())
		fs.VisitAll(func(f *flag.Flag) {
			fmt.Fprintf(fs.Output(), "  -%s (env %s)\n    \t%s", f.Name, envName(prefix, f.Name), f.Usage)
			if f.DefValue != "" {
				fmt.Fprintf(fs.Output(), " (default %q)", f.DefValue)
			}
			fmt.Fprintln(fs.Output())
		})
	}
	var positional []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		left := fs.Args()
		if len(left) == 0 {
			break
		}
		if consumed := len(rest) - len(left); consumed > 0 && rest[consumed-1] == "--" {
			positional = append(positional, left...)
			break
		}
		positional = append(positional, left[0])
		rest = left[1:]
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		name := envName(prefix, f.Name)
		if v := env.getenv(name); v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s=%q: %w", name, v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(fs.Output(), "cellar %s: %v\n", fs.Name(), err)
		return nil, err
	}
	if f := fs.Lookup("config"); f != nil && f.Value.String() != "" {
		fs.VisitAll(func(f *flag.Flag) {
			if env.getenv(envName(prefix, f.Name)) != "" {
				set[f.Name] = true
			}
		})
		if err := applyConfig(fs, f.Value.String(), set); err != nil {
			fmt.Fprintf(fs.Output(), "cellar %s: %v\n", fs.Name(), err)
			return nil, err
		}
	}
	return positional, nil
}

// flagExit is the exit status of a command whose flags did not parse:
// 0 after -h or --help printed the usage, 2 for bad input.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

func envName(prefix, flagName string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
