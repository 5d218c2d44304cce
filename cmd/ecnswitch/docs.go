package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
)

// The documents made from the command tree: docs/cli.md, the man page
// docs/ecnswitch.1 and the shell completions. `go generate` rewrites the
// files (TestGeneratedDocs -update), and the test fails when they are
// stale.

// grammar is what every command shares, for docs/cli.md and the man page:
// one paragraph a line.
var grammar = []string{
	"Every command takes `-h` or `--help`, which prints its usage, flags and exit status to stdout and exits 0; " +
		"`ecnswitch help COMMAND` does the same, and `ecnswitch --version` is `ecnswitch version`.",
	"Flags are written `--flag VALUE` or `--flag=VALUE`, before, between or after a command's arguments; " +
		"after `--` everything is an argument. Two have a one-letter form: `-c FILE` is `--config FILE`, `-n N` is `--hosts N`.",
	"Boolean flags are off unless given (`--json`, `--short`). A flag that turns a default off is named `--no-...`: " +
		"`--no-ecn`, `--no-place`. (`--flag=false` is accepted too.)",
	"Rates, sizes and durations are written as in the config file and parsed by the config's parsers. " +
		"A rate carries its unit: `995Mbit`, `10Gbit`, `25Gbps`, `2.5Gbit/s` (powers of 1000; `0` means none). " +
		"A rate without its unit is refused (\"has no unit\", exit 2): `demo --rate` once took Mbit/s and `endpoint send --rate` bit/s, " +
		"and a bare number would keep one of them wrong by a factor of a million without a word. " +
		"A size is bytes, with or without a unit: `1500`, `96KB`, `64KiB`, `2MB` (KB, MB, GB are powers of 1000; KiB, MiB, GiB of 1024). " +
		"A duration is Go's: `250us` (or `250µs`), `1.5ms`, `2s`; a bare `0` is zero, and any other bare number is refused. " +
		"The load generator's `--rate` also takes frames per second (`500kpps`, `1Mpps`) and `max`.",
}

// docLeaf is a leaf command with its flags, for the documents.
type docLeaf struct {
	path  string
	cmd   *command
	flags []flagDoc
}

// docTree returns every leaf of the tree below root, in the order the
// tree lists them, with their flags.
func docTree(root *command) []docLeaf {
	var out []docLeaf
	root.walk(root.name, func(c *command, path string) {
		if c.setup == nil {
			return
		}
		fs, _ := c.flags(path)
		out = append(out, docLeaf{path: path, cmd: c, flags: c.flagList(fs)})
	})
	return out
}

// groups returns the paths of root and the groups below it, with their
// subcommands' names.
func groups(root *command) map[string][]string {
	m := map[string][]string{}
	root.walk(root.name, func(c *command, path string) {
		for _, s := range c.subs {
			m[path] = append(m[path], s.name)
		}
	})
	return m
}

// writeMarkdown writes docs/cli.md.
func writeMarkdown(w io.Writer, root *command) {
	fmt.Fprintf(w, "# The ecnswitch command line\n\n")
	fmt.Fprintf(w, "<!-- Generated from cmd/ecnswitch's command tree by `go generate ./cmd/ecnswitch`: edit the commands, not this file. -->\n\n")
	fmt.Fprintf(w, "%s\n\n", root.help)
	for _, p := range grammar {
		fmt.Fprintf(w, "%s\n\n", p)
	}
	fmt.Fprintf(w, "The same page is `man 1 ecnswitch` once installed (docs/ecnswitch.1), and `ecnswitch completion bash` or `zsh` prints a completion script made from the same definitions.\n\n")
	fmt.Fprintf(w, "## Exit status\n\n| code | meaning |\n|---:|---|\n")
	for _, c := range exitCodes {
		fmt.Fprintf(w, "| %d | %s |\n", c.code, mdCell(c.meaning))
	}
	fmt.Fprintf(w, "\nEvery command exits with these codes and no others, but for a signal's default action and a panic (which exits 2 with a stack trace, and is a bug to report).\n\n")
	fmt.Fprintf(w, "## Commands\n\n| command | what it does |\n|---|---|\n")
	leaves := docTree(root)
	for _, l := range leaves {
		fmt.Fprintf(w, "| [`%s`](#%s) | %s |\n", l.path, anchor(l.path), mdCell(l.cmd.summary))
	}
	flags := map[string][]flagDoc{}
	for _, l := range leaves {
		flags[l.path] = l.flags
	}
	root.walk(root.name, func(c *command, path string) {
		if c == root {
			return
		}
		fmt.Fprintf(w, "\n## %s\n\n", path)
		if c.setup == nil { // a group
			if c.help != "" {
				fmt.Fprintf(w, "%s\n\n", mdText(c.help))
			}
			for _, s := range c.subs {
				fmt.Fprintf(w, "- [`%s %s`](#%s): %s\n", path, s.name, anchor(path+" "+s.name), mdEscape(s.summary))
			}
			return
		}
		fmt.Fprintf(w, "```\n%s %s\n```\n\n%s\n", path, c.synopsis, mdText(c.help))
		if len(flags[path]) == 0 {
			return
		}
		fmt.Fprintf(w, "\n| flag | default | meaning |\n|---|---|---|\n")
		for _, f := range flags[path] {
			def := ""
			if f.def != "" {
				def = "`" + f.def + "`"
			}
			fmt.Fprintf(w, "| `%s` | %s | %s |\n", f.names(), def, mdCell(strings.TrimSuffix(f.usage, " (default "+f.def+")")))
		}
	})
}

// anchor returns the GitHub anchor of a heading: "ecnswitch bench gen" →
// "ecnswitch-bench-gen".
func anchor(heading string) string { return strings.ReplaceAll(heading, " ", "-") }

// mdText turns help text into Markdown: lines that start with two spaces
// (examples, lists) become a code block; the rest are a paragraph.
func mdText(s string) string {
	var b strings.Builder
	inCode := false
	for _, l := range strings.Split(s, "\n") {
		code := strings.HasPrefix(l, "  ")
		switch {
		case code && !inCode:
			b.WriteString("\n```\n")
		case !code && inCode:
			b.WriteString("```\n")
		}
		inCode = code
		if code {
			b.WriteString(strings.TrimPrefix(l, "  ") + "\n")
			continue
		}
		b.WriteString(mdEscape(l) + "\n")
	}
	if inCode {
		b.WriteString("```\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// mdEscape keeps Markdown from reading * and _ in plain text as emphasis,
// and < as HTML.
var mdEscaper = strings.NewReplacer("*", `\*`, "_", `\_`, "<", "&lt;")

func mdEscape(s string) string { return mdEscaper.Replace(s) }

// mdCell makes text fit a Markdown table cell.
func mdCell(s string) string {
	return strings.ReplaceAll(mdEscape(strings.ReplaceAll(s, "\n", " ")), "|", `\|`)
}

// writeMan writes the man page, man 1 ecnswitch, in roff.
func writeMan(w io.Writer, root *command) {
	fmt.Fprintf(w, ".\\\" Generated from cmd/ecnswitch's command tree by go generate ./cmd/ecnswitch; do not edit.\n")
	fmt.Fprintf(w, ".TH ECNSWITCH 1 \"\" \"ecnswitch\" \"User Commands\"\n.nh\n.ad l\n")
	fmt.Fprintf(w, ".SH NAME\necnswitch \\- userspace AF_XDP switch for datacenter ECN research\n")
	fmt.Fprintf(w, ".SH SYNOPSIS\n.B ecnswitch\n.I command\n.RI [ flags ]\n.br\n.B ecnswitch\n.RB [ \\-\\-version | \\-\\-help ]\n")
	fmt.Fprintf(w, ".SH DESCRIPTION\n%s\n", roff(root.help))
	for _, p := range grammar {
		fmt.Fprintf(w, ".PP\n%s\n", roffCode(p))
	}
	fmt.Fprintf(w, ".SH COMMANDS\n")
	for _, l := range docTree(root) {
		fmt.Fprintf(w, ".SS \"%s\"\n.B %s\n%s\n.PP\n%s\n", l.path, roff(l.path), roff(l.cmd.synopsis), roffHelp(l.cmd.help))
		for _, f := range l.flags {
			name := "\\-\\-" + roff(f.name)
			if f.short != "" {
				name = "\\-" + f.short + ", " + name
			}
			if f.placeholder != "" {
				name += " \\fI" + f.placeholder + "\\fR"
			}
			fmt.Fprintf(w, ".TP\n.B %s\n%s\n", name, roff(strings.ReplaceAll(f.usage, "\n", " ")))
		}
	}
	fmt.Fprintf(w, ".SH EXIT STATUS\n")
	for _, c := range exitCodes {
		fmt.Fprintf(w, ".TP\n.B %d\n%s\n", c.code, roff(c.meaning))
	}
	fmt.Fprintf(w, ".SH FILES\n.TP\n.I /etc/ecnswitch/ecnswitch.yaml\nthe config of the ecnswitch service (make install puts a two-port one there); examples/ecnswitch.yaml in the source documents every key\n")
	fmt.Fprintf(w, ".TP\n.I /run/ecnswitch/ecnswitch.sock\nthe running switch's control socket (control.socket)\n")
	fmt.Fprintf(w, ".SH SEE ALSO\n.BR ip (8),\n.BR ethtool (8),\n.BR systemctl (1)\n")
}

// roffEscaper escapes text for roff: backslashes, and hyphens, which roff
// would otherwise set as hyphens rather than the minus signs a flag needs.
var roffEscaper = strings.NewReplacer(`\`, `\e`, "-", `\-`)

// roff escapes s for a roff text line: a line may not start with a
// control character, and characters beyond ASCII are written as groff's
// \[uXXXX] escapes, so that no input encoding need be guessed.
func roff(s string) string {
	s = roffEscaper.Replace(s)
	var b strings.Builder
	for _, r := range s {
		if r > unicode.MaxASCII {
			fmt.Fprintf(&b, `\[u%04X]`, r)
			continue
		}
		b.WriteRune(r)
	}
	s = b.String()
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// roffCode escapes s, setting the `code` spans of Markdown in bold.
func roffCode(s string) string {
	parts := strings.Split(roff(s), "`")
	for i := 1; i < len(parts); i += 2 {
		parts[i] = `\fB` + parts[i] + `\fR`
	}
	return strings.Join(parts, "")
}

// roffHelp sets help text: lines that start with two spaces (examples)
// as they are, the rest filled.
func roffHelp(s string) string {
	var b strings.Builder
	inCode := false
	for _, l := range strings.Split(s, "\n") {
		code := strings.HasPrefix(l, "  ")
		switch {
		case code && !inCode:
			b.WriteString(".nf\n")
		case !code && inCode:
			b.WriteString(".fi\n")
		}
		inCode = code
		b.WriteString(roff(l) + "\n")
	}
	if inCode {
		b.WriteString(".fi\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// writeBash writes a bash completion script: command names, then each
// command's flags; files after a flag that takes a value.
func writeBash(w io.Writer, root *command) {
	g := groups(root)
	paths := make([]string, 0, len(g))
	for p := range g {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var known []string
	root.walk(root.name, func(c *command, path string) {
		if c != root {
			known = append(known, strings.ReplaceAll(path, " ", "/"))
		}
	})
	fmt.Fprintf(w, "# bash completion for ecnswitch; generated by 'ecnswitch completion bash'.\n")
	fmt.Fprintf(w, "_ecnswitch() {\n")
	fmt.Fprintf(w, "\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" path=ecnswitch i words=\"\" values=\"\"\n")
	fmt.Fprintf(w, "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n\t\tcase \"$path/${COMP_WORDS[i]}\" in\n")
	fmt.Fprintf(w, "\t\t%s) path=\"$path/${COMP_WORDS[i]}\" ;;\n", strings.Join(known, "|"))
	fmt.Fprintf(w, "\t\tesac\n\tdone\n\tcase \"$path\" in\n")
	for _, p := range paths {
		words := append(slices.Clone(g[p]), "--help")
		if p == root.name {
			words = append(words, "--version", "help")
		}
		fmt.Fprintf(w, "\t%s) words=%q ;;\n", strings.ReplaceAll(p, " ", "/"), strings.Join(words, " "))
	}
	for _, l := range docTree(root) {
		var words, values []string
		for _, f := range l.flags {
			words = append(words, "--"+f.name)
			if f.placeholder != "" {
				values = append(values, "--"+f.name)
			}
			if f.short != "" {
				words = append(words, "-"+f.short)
				if f.placeholder != "" {
					values = append(values, "-"+f.short)
				}
			}
		}
		words = append(words, "--help")
		fmt.Fprintf(w, "\t%s) words=%q values=%q ;;\n", strings.ReplaceAll(l.path, " ", "/"), strings.Join(words, " "), strings.Join(values, " "))
	}
	fmt.Fprintf(w, "\tesac\n")
	fmt.Fprintf(w, "\tif [[ \" $values \" == *\" $prev \"* ]]; then\n\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n\t\treturn\n\tfi\n")
	fmt.Fprintf(w, "\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\n")
	fmt.Fprintf(w, "complete -o default -F _ecnswitch ecnswitch\n")
}

// writeZsh writes a zsh completion script: the bash one, through zsh's
// bashcompinit.
func writeZsh(w io.Writer, root *command) {
	fmt.Fprintf(w, "#compdef ecnswitch\n# zsh completion for ecnswitch; generated by 'ecnswitch completion zsh'.\n")
	fmt.Fprintf(w, "autoload -U +X bashcompinit && bashcompinit\n")
	writeBash(w, root)
}

// completionCommand is `ecnswitch completion bash|zsh`.
func completionCommand() *command {
	return &command{
		name: "completion", synopsis: "bash | zsh", args: 1,
		summary: "print a shell completion script",
		help: "Print a completion script for bash or zsh, made from the same definitions as -h\n" +
			"and the man page. Load it for this shell, or install it:\n" +
			"  source <(ecnswitch completion bash)\n" +
			"  ecnswitch completion bash > /usr/share/bash-completion/completions/ecnswitch\n" +
			"  ecnswitch completion zsh > \"${fpath[1]}/_ecnswitch\"",
		setup: func(fs *flag.FlagSet) action {
			return func(e *env, pos []string) int {
				switch {
				case len(pos) == 1 && pos[0] == "bash":
					writeBash(e.stdout, commands())
				case len(pos) == 1 && pos[0] == "zsh":
					writeZsh(e.stdout, commands())
				default:
					return e.usageError("completion", "which shell? bash or zsh")
				}
				return exitOK
			}
		},
	}
}
