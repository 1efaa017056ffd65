package cli

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A config file holds a command's settings, one per line:
//
//	# comment
//	listen = 127.0.0.1:9100
//	dfs = "/mnt/cellar dfs"   # double quotes keep spaces and '#'
//
// Names are the command's flag names without the dash. Blank lines and
// text after '#' are ignored. A setting appears at most once; unknown
// names and bad values are errors that name the file and line.

// applyConfig sets, from the config file at path, every flag of fs that is
// not in skip (those the command line or the environment set).
func applyConfig(fs *flag.FlagSet, path string, skip map[string]bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		name, value, ok, err := configLine(sc.Text())
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if !ok {
			continue
		}
		f := fs.Lookup(name)
		if f == nil || name == "config" {
			return fmt.Errorf("%s:%d: unknown setting %q (cellar %s has no flag -%s)", path, n, name, fs.Name(), name)
		}
		if first, dup := seen[name]; dup {
			return fmt.Errorf("%s:%d: %q is already set on line %d", path, n, name, first)
		}
		seen[name] = n
		if skip[name] {
			continue
		}
		if err := f.Value.Set(value); err != nil {
			return fmt.Errorf("%s:%d: %s = %q: %w", path, n, name, value, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// configLine splits one line into name and value; ok is false for a blank
// or comment line.
func configLine(line string) (name, value string, ok bool, err error) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", "", false, nil
	}
	name, rest, found := strings.Cut(line, "=")
	name = strings.TrimSpace(name)
	if !found || name == "" || strings.ContainsAny(name, " \t\"#") {
		return "", "", false, fmt.Errorf("%q is not a setting: want name = value", line)
	}
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, `"`) {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return "", "", false, fmt.Errorf("%s: bad quoted value %s", name, rest)
		}
		value, _ = strconv.Unquote(q)
		if tail := strings.TrimSpace(rest[len(q):]); tail != "" && tail[0] != '#' {
			return "", "", false, fmt.Errorf("%s: text after the quoted value: %q", name, tail)
		}
		return name, value, true, nil
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = strings.TrimSpace(rest[:i])
	}
	return name, rest, true, nil
}
