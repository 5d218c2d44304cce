package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/loadgen"
)

// Every command, group or leaf, prints its help to stdout and exits 0 on
// -h, --help and help: `ecnswitch --help | less` shows it.
func TestHelpEverywhere(t *testing.T) {
	commands().walk("ecnswitch", func(c *command, path string) {
		args := strings.Fields(path)[1:]
		for _, h := range [][]string{{"-h"}, {"--help"}} {
			code, out, errs := cli(t, append(append([]string(nil), args...), h...)...)
			if code != exitOK || errs != "" || !strings.HasPrefix(out, "usage: "+path+" ") {
				t.Errorf("%s %s: exit %d, stderr %q, stdout starts %.40q; want 0, nothing, the usage", path, h[0], code, errs, out)
			}
		}
		code, out, _ := cli(t, append([]string{"help"}, args...)...)
		if code != exitOK || !strings.HasPrefix(out, "usage: "+path+" ") {
			t.Errorf("ecnswitch help %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		if c.setup == nil {
			return
		}
		// A leaf's help lists every flag as --flag, and the exit codes.
		fs, _ := c.flags(path)
		fs.VisitAll(func(f *flag.Flag) {
			if _, alias := c.short[f.Name]; !alias && !strings.Contains(out, "\n  --"+f.Name) && !strings.Contains(out, ", --"+f.Name) {
				t.Errorf("%s --help does not show --%s:\n%s", path, f.Name, out)
			}
		})
		if !strings.Contains(out, "exit status: 0 ok, 1 failed, 2 usage error.") {
			t.Errorf("%s --help does not give the exit codes", path)
		}
		// An unknown flag is a usage error, on stderr, naming the flag as
		// the help does.
		code, out, errs := cli(t, append(append([]string(nil), args...), "--no-such-flag")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "flag provided but not defined: --no-such-flag") || !strings.Contains(errs, "Run '"+path+" --help'") {
			t.Errorf("%s --no-such-flag: exit %d, stdout %q, stderr %q", path, code, out, errs)
		}
	})
	// A group without its command, and an unknown command, are usage
	// errors on stderr.
	for _, args := range [][]string{nil, {"capture"}, {"bench"}, {"endpoint"}, {"testbed"}, {"frobnicate"}, {"bench", "frob"}, {"help", "frob"}} {
		if code, out, errs := cli(t, args...); code != exitUsage || out != "" || !strings.Contains(errs, "usage: ecnswitch") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and the usage on stderr", args, code, out, errs, exitUsage)
		}
	}
}

// One style of boolean: every boolean flag is off by default, and a flag
// that turns something off is a --no-... boolean.
func TestBooleanFlagsDefaultOff(t *testing.T) {
	for _, l := range docTree(commands()) {
		fs, _ := l.cmd.flags(l.path)
		fs.VisitAll(func(f *flag.Flag) {
			b, isBool := f.Value.(interface{ IsBoolFlag() bool })
			isBool = isBool && b.IsBoolFlag()
			switch {
			case isBool && f.DefValue != "false":
				t.Errorf("%s --%s defaults to %s: make it --no-%s, off by default", l.path, f.Name, f.DefValue, f.Name)
			case strings.HasPrefix(f.Name, "no-") && !isBool:
				t.Errorf("%s --%s is named as a negation but takes a value", l.path, f.Name)
			}
		})
	}
}

// Rates, sizes and durations parse as the config's do, on every command;
// a rate without its unit is refused, since the old commands disagreed on
// what it meant.
func TestUnitFlags(t *testing.T) {
	var bps int64
	var n int64
	var d time.Duration
	var gen loadgen.Rate
	for _, c := range []struct {
		v    flag.Value
		in   string
		want any
		err  string
	}{
		{rateValue{&bps}, "995Mbit", int64(995e6), ""},
		{rateValue{&bps}, "2.5Gbit/s", int64(2.5e9), ""},
		{rateValue{&bps}, "25Gbps", int64(25e9), ""},
		{rateValue{&bps}, "0", int64(0), ""},
		{rateValue{&bps}, "995", nil, `"995" has no unit`},
		{rateValue{&bps}, "1000000000", nil, `"1000000000" has no unit`},
		{rateValue{&bps}, "1.5", nil, "has no unit"},
		{rateValue{&bps}, "5 furlongs", nil, "unknown unit"},
		{rateValue{&bps}, "fast", nil, "not a rate"},
		{rateValue{&bps}, "1Mpint", nil, "unknown unit"},
		{&sizeValue{n: &n}, "96KB", int64(96000), ""},
		{&sizeValue{n: &n}, "64KiB", int64(65536), ""},
		{&sizeValue{n: &n}, "98304", int64(98304), ""}, // bytes, as they always were
		{&sizeValue{n: &n}, "1 pint", nil, "unknown unit"},
		{durationValue{&d}, "250us", 250 * time.Microsecond, ""},
		{durationValue{&d}, "250µs", 250 * time.Microsecond, ""},
		{durationValue{&d}, "0", time.Duration(0), ""},
		{durationValue{&d}, "5", nil, "has no unit"},
		{genRateValue{&gen}, "100Mbit", loadgen.Rate{Bits: 100e6}, ""},
		{genRateValue{&gen}, "500kpps", loadgen.Rate{Packets: 500e3}, ""},
		{genRateValue{&gen}, "max", loadgen.Rate{}, ""},
		{genRateValue{&gen}, "100", nil, "has no unit"},
		{genRateValue{&gen}, "100bit", nil, "at least 1 kbit/s"},
	} {
		err := c.v.Set(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%T.Set(%q) = %v, want an error with %q", c.v, c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%T.Set(%q): %v", c.v, c.in, err)
			continue
		}
		var got any
		switch c.v.(type) {
		case rateValue:
			got = bps
		case *sizeValue:
			got = n
		case durationValue:
			got = d
		case genRateValue:
			got = gen
		}
		if got != c.want {
			t.Errorf("%T.Set(%q) = %v, want %v", c.v, c.in, got, c.want)
		}
	}

	// Through the commands: units are taken, and a bare rate is a usage
	// error that names the flag and says what to write.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--rate", "995"}, `invalid value "995" for flag --rate: "995" has no unit; write it with one, as in the config: 995Mbit`},
		{[]string{"demo", "--buffer", "96 parsecs"}, `invalid value "96 parsecs" for flag --buffer`},
		{[]string{"demo", "--delay", "70"}, `invalid value "70" for flag --delay: "70" has no unit`},
		{[]string{"endpoint", "send", "--to", "127.0.0.1:9", "--rate", "1000000000"}, `"1000000000" has no unit`},
		{[]string{"bench", "gen", "--iface", "x", "--rate", "100"}, `"100" has no unit`},
		{[]string{"stats", "--interval", "1"}, `"1" has no unit`},
	} {
		code, _, errs := cli(t, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", c.args, code, exitUsage, c.want, errs)
		}
	}
	// Defaults show in the config's units.
	_, out, _ := cli(t, "demo", "--help")
	for _, want := range []string{"--rate RATE", "(default 995Mbit)", "--buffer SIZE", "(default 96KiB)", "--delay DURATION"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo --help lacks %q:\n%s", want, out)
		}
	}
}

// Flags may come before, between and after arguments; after -- all is an
// argument.
func TestParseInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	j := fs.Bool("json", false, "")
	s := fs.String("socket", "", "")
	pos, err := parseInterspersed(fs, []string{"3", "--socket", "S", "4", "--json", "--", "--x", "5"})
	if err != nil || strings.Join(pos, " ") != "3 4 --x 5" || !*j || *s != "S" {
		t.Errorf("pos %q, err %v, json %v, socket %q", pos, err, *j, *s)
	}
}

func TestLongFlags(t *testing.T) {
	for in, want := range map[string]string{
		"flag provided but not defined: -bogus":                "flag provided but not defined: --bogus",
		`invalid value "x" for flag -queue: not an integer`:    `invalid value "x" for flag --queue: not an integer`,
		"flag needs an argument: -rate":                        "flag needs an argument: --rate",
		"flag needs an argument: -c":                           "flag needs an argument: -c",
		"flag provided but not defined: --bogus":               "flag provided but not defined: --bogus",
		`invalid value "1" for flag -n: parse error`:           `invalid value "1" for flag -n: parse error`,
		"bad flag syntax: ---x":                                "bad flag syntax: ---x",
		"flag provided but not defined: -x-y":                  "flag provided but not defined: --x-y",
		`invalid value "a b" for flag -max-bytes: want a size`: `invalid value "a b" for flag --max-bytes: want a size`,
	} {
		if got := longFlags(in); got != want {
			t.Errorf("longFlags(%q) = %q, want %q", in, got, want)
		}
	}
}

// The one-letter flags are the long ones.
func TestShortFlags(t *testing.T) {
	p := writeFile(t, "c.yaml", "ports: [{name: p1}, {name: p2}]\n")
	for _, args := range [][]string{{"validate", "-c", p}, {"validate", "--config", p}, {"validate", "--config=" + p}} {
		if code, out, errs := cli(t, args...); code != exitOK || !strings.Contains(out, "c.yaml: ok") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	_, out, _ := cli(t, "validate", "-h")
	if !strings.Contains(out, "  -c, --config FILE\n") {
		t.Errorf("validate -h:\n%s", out)
	}
}

// The exit codes are the three documented ones, and each is what the
// command says it is.
func TestExitCodes(t *testing.T) {
	if len(exitCodes) != 3 || exitCodes[0].code != 0 || exitCodes[1].code != 1 || exitCodes[2].code != 2 {
		t.Fatalf("exitCodes %v: want 0, 1, 2 in order", exitCodes)
	}
	bad := writeFile(t, "bad.yaml", "workers: 0\nports: [{name: p1}]\n")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"version"}, exitOK},
		{[]string{"--help"}, exitOK},
		{[]string{"validate", "-c", bad}, exitFail},
		{[]string{"validate"}, exitUsage},
		{[]string{"validate", "--config"}, exitUsage},
		{[]string{"completion"}, exitUsage},
		{[]string{"completion", "fish"}, exitUsage},
	} {
		if code, _, _ := cli(t, c.args...); code != c.code {
			t.Errorf("%v: exit %d, want %d", c.args, code, c.code)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := cli(t, args...)
		if code != exitOK || errs != "" || !strings.HasPrefix(out, "ecnswitch ") || !strings.Contains(out, "\nrevision  ") || !strings.Contains(out, "\ngo        go1.") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	code, out, _ := cli(t, "version", "--json")
	var i buildinfo.Info
	if err := json.Unmarshal([]byte(out), &i); code != exitOK || err != nil || i.GoVersion == "" {
		t.Errorf("version --json: exit %d, %v\n%s", code, err, out)
	}

	// A stamped build shows its revision, commit time and whether the
	// tree was modified.
	var b bytes.Buffer
	writeVersion(&b, buildinfo.FromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.0"},
		Settings: []debug.BuildSetting{{Key: "GOARCH", Value: "amd64"}, {Key: "vcs.revision", Value: "2f1147e0"}, {Key: "vcs.time", Value: "2026-11-27T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}))
	if want := "ecnswitch v1.2.0\nrevision  2f1147e0 (modified)\ncommitted 2026-11-27 10:00:00 UTC\ngo        go1.26.0 amd64\n"; b.String() != want {
		t.Errorf("version of a stamped build:\n%s\nwant\n%s", b.String(), want)
	}
}
