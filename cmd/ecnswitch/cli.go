package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
)

// A command is a node of ecnswitch's command tree: a group, whose
// subcommands do the work (capture, bench), or a leaf, which defines its
// flags and runs. The tree is the one source of every command's -h, of
// docs/cli.md, of the man page and of the shell completions.
type command struct {
	name     string // as typed
	synopsis string // what follows the name in its usage line: "-c FILE", "--port P [flags]"
	summary  string // one line, for the parent's list
	help     string // what -h prints above the flags

	// subs are a group's subcommands.
	subs []*command

	// setup defines a leaf's flags on fs and returns what runs once they
	// are parsed. It does nothing else, so that the documentation can
	// call it to list the flags.
	setup func(fs *flag.FlagSet) action
	// args is how many positional arguments the leaf takes at most; -1:
	// any number. Flags may come before, between and after them.
	args int
	// short maps one-letter flags to the long flags they stand for:
	// {"c": "config"} makes -c FILE the same as --config FILE.
	short map[string]string
}

// An action runs a leaf once its flags are parsed, with its positional
// arguments, and returns the exit code.
type action func(e *env, args []string) int

// run runs the command c, called path ("ecnswitch bench"), with args.
func (c *command) run(e *env, path string, args []string) int {
	if c.setup != nil {
		return c.runLeaf(e, path, args)
	}
	if len(args) == 0 {
		c.writeUsage(e.stderr, path)
		return exitUsage
	}
	switch a := args[0]; {
	case a == "-h" || a == "--help" || a == "-help":
		c.writeUsage(e.stdout, path)
		return exitOK
	case a == "help":
		return c.helpCmd(e, path, args[1:])
	case path == "ecnswitch" && (a == "--version" || a == "-version"):
		return versionCommand().run(e, "ecnswitch version", nil)
	}
	if sub := c.sub(args[0]); sub != nil {
		return sub.run(e, path+" "+sub.name, args[1:])
	}
	fmt.Fprintf(e.stderr, "%s: unknown command %q\n\n", path, args[0])
	c.writeUsage(e.stderr, path)
	return exitUsage
}

// sub returns the subcommand called name, or nil.
func (c *command) sub(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

// helpCmd prints the help of the subcommand args name ("help bench gen").
func (c *command) helpCmd(e *env, path string, args []string) int {
	for _, a := range args {
		s := c.sub(a)
		if s == nil {
			fmt.Fprintf(e.stderr, "%s: no command %q\n\n", path, a)
			c.writeUsage(e.stderr, path)
			return exitUsage
		}
		c, path = s, path+" "+s.name
	}
	if c.setup != nil {
		fs, _ := c.flags(path)
		c.writeHelp(e.stdout, path, fs)
		return exitOK
	}
	c.writeUsage(e.stdout, path)
	return exitOK
}

// flags returns a leaf's flag set, with its flags defined, and its action.
func (c *command) flags(path string) (*flag.FlagSet, action) {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // runLeaf says what went wrong, and where help goes
	fs.Usage = func() {}
	act := c.setup(fs)
	for s, long := range c.short {
		f := fs.Lookup(long)
		if f == nil {
			panic(fmt.Sprintf("%s: -%s stands for --%s, which is not defined", path, s, long))
		}
		fs.Var(f.Value, s, f.Usage)
	}
	return fs, act
}

// runLeaf parses args and runs the leaf's action.
func (c *command) runLeaf(e *env, path string, args []string) int {
	fs, act := c.flags(path)
	pos, err := parseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.writeHelp(e.stdout, path, fs)
		return exitOK
	case err != nil:
		fmt.Fprintf(e.stderr, "%s: %s\n", path, longFlags(err.Error()))
		c.writeUsageLine(e.stderr, path)
		return exitUsage
	case c.args >= 0 && len(pos) > c.args:
		fmt.Fprintf(e.stderr, "%s: unexpected arguments: %s\n", path, strings.Join(pos[c.args:], " "))
		c.writeUsageLine(e.stderr, path)
		return exitUsage
	}
	return act(e, pos)
}

// parseInterspersed parses flags that may come before, between or after
// positional arguments (stop 3 --socket S, or stop --socket S 3) and
// returns the positional arguments. After "--" everything is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// longFlags rewrites the flag package's messages, which name flags with
// one dash ("flag provided but not defined: -bogus"), to name them as the
// help shows them: --bogus. One-letter flags keep their one dash.
func longFlags(msg string) string {
	for _, pre := range []string{"not defined: -", "for flag -", "needs an argument: -"} {
		i := strings.Index(msg, pre)
		if i < 0 {
			continue
		}
		at := i + len(pre)
		name := msg[at:]
		if j := strings.IndexAny(name, ": "); j >= 0 {
			name = name[:j]
		}
		if len(name) > 1 && !strings.HasPrefix(name, "-") {
			msg = msg[:at] + "-" + msg[at:]
		}
	}
	return msg
}

// writeUsage prints a group's usage: its subcommands with their synopses
// and summaries.
func (c *command) writeUsage(w io.Writer, path string) {
	fmt.Fprintf(w, "usage: %s COMMAND [flags]\n\n", path)
	if c.help != "" {
		fmt.Fprintf(w, "%s\n\n", c.help)
	}
	fmt.Fprintln(w, "commands:")
	width := 0
	for _, s := range c.subs {
		width = max(width, len(s.name))
	}
	for _, s := range c.subs {
		fmt.Fprintf(w, "  %-*s  %s\n", width, s.name, s.summary)
		if s.synopsis != "" {
			fmt.Fprintf(w, "  %-*s  %s %s %s\n", width, "", path, s.name, s.synopsis)
		}
	}
	fmt.Fprintf(w, "\nRun '%s COMMAND --help' for a command's flags", path)
	if path == "ecnswitch" {
		fmt.Fprint(w, ", 'ecnswitch --version' for the build.\nRates, sizes and durations are written as in the config: 995Mbit, 96KB, 250us.\nexamples/ecnswitch.yaml documents the config")
	}
	fmt.Fprintln(w, ".")
}

// writeUsageLine prints a leaf's usage line and where to find its flags,
// after a usage error.
func (c *command) writeUsageLine(w io.Writer, path string) {
	fmt.Fprintf(w, "usage: %s %s\nRun '%s --help' for the flags.\n", path, c.synopsis, path)
}

// writeHelp prints a leaf's help: its usage line, what it does, its flags
// and the exit codes.
func (c *command) writeHelp(w io.Writer, path string, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s %s\n\n%s\n", path, c.synopsis, c.help)
	if fl := c.flagList(fs); len(fl) > 0 {
		fmt.Fprintln(w, "\nflags:")
		for _, f := range fl {
			fmt.Fprintf(w, "  %s\n    \t%s\n", f.names(), strings.ReplaceAll(f.usage, "\n", "\n    \t"))
		}
	}
	fmt.Fprint(w, "\nexit status: 0 ok, 1 failed, 2 usage error.\n")
}

// flagDoc is one flag as help, docs and completions show it.
type flagDoc struct {
	name        string // long name, without dashes
	short       string // one-letter alias, or ""
	placeholder string // the value's name: RATE, FILE; "" for a boolean
	usage       string // with its default appended
	def         string // the default as typed, "" when it is the zero value
}

// names returns "-c, --config FILE", "--json".
func (f flagDoc) names() string {
	s := "--" + f.name
	if f.short != "" {
		s = "-" + f.short + ", " + s
	}
	if f.placeholder != "" {
		s += " " + f.placeholder
	}
	return s
}

// flagList returns fs's flags in name order, one-letter aliases folded
// into the flags they stand for.
func (c *command) flagList(fs *flag.FlagSet) []flagDoc {
	var out []flagDoc
	fs.VisitAll(func(f *flag.Flag) {
		if _, alias := c.short[f.Name]; alias {
			return
		}
		d := flagDoc{name: f.Name, def: f.DefValue}
		for s, long := range c.short {
			if long == f.Name {
				d.short = s
			}
		}
		name, usage := flag.UnquoteUsage(f)
		if p, ok := f.Value.(interface{ placeholder() string }); ok && !strings.Contains(f.Usage, "`") {
			name = p.placeholder()
		}
		d.placeholder = strings.ToUpper(name)
		if slices.Contains([]string{"", "0", "0s", "false"}, d.def) {
			d.def = ""
		} else {
			usage += " (default " + d.def + ")"
		}
		d.usage = usage
		out = append(out, d)
	})
	return out
}

// walk calls f for c and every command below it, depth first, with its
// path.
func (c *command) walk(path string, f func(c *command, path string)) {
	f(c, path)
	for _, s := range c.subs {
		s.walk(path+" "+s.name, f)
	}
}

// writeVersion prints i as `ecnswitch version` does.
func writeVersion(w io.Writer, i buildinfo.Info) {
	rev := i.Revision
	switch {
	case rev == "":
		rev = "unknown (built without VCS information)"
	case i.Modified:
		rev += " (modified)"
	}
	fmt.Fprintf(w, "ecnswitch %s\n", i.Version)
	fmt.Fprintf(w, "revision  %s\n", rev)
	if !i.Time.IsZero() {
		fmt.Fprintf(w, "committed %s\n", i.Time.UTC().Format("2006-01-02 15:04:05 MST"))
	}
	fmt.Fprintf(w, "go        %s %s\n", i.GoVersion, i.Arch)
	if i.Kernel != "" {
		fmt.Fprintf(w, "kernel    %s\n", i.Kernel)
	}
	if i.CPU != "" {
		cpu := i.CPU
		if i.CPUs > 0 {
			cpu = fmt.Sprintf("%d × %s", i.CPUs, cpu)
		}
		fmt.Fprintf(w, "cpu       %s\n", cpu)
	}
}
