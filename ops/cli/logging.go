package cli

import (
	"flag"
	"fmt"
	"log/slog"
	"strings"
)

// processFlags are the flags every server role has: -config (read by
// parseFlags) and -log-level and -log-format. Each process makes one
// logger from them and passes it down, with the role (and server) as
// attributes.
type processFlags struct {
	level  *string
	format *string
}

func addProcessFlags(fs *flag.FlagSet) processFlags {
	fs.String("config", "", "file of settings, one \"name = value\" per line, named like the flags; flags and environment variables override it")
	return processFlags{
		level:  fs.String("log-level", "info", "least severe log records written to stderr: debug, info, warn or error"),
		format: fs.String("log-format", "text", "log record format on stderr: text (key=value) or json"),
	}
}

// logger makes the process's logger, writing to env.Stderr.
func (l processFlags) logger(env Env) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*l.level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: not one of debug, info, warn, error", *l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(*l.format) {
	case "text":
		return slog.New(slog.NewTextHandler(env.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(env.Stderr, opts)), nil
	default:
		return nil, fmt.Errorf("-log-format %q: not text or json", *l.format)
	}
}
