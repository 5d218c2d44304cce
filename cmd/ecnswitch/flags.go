package main

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/loadgen"
)

// The flag types every command shares: rates, sizes and durations are
// written as in the config file and parsed by the config's parsers, so
// that --rate 995Mbit, --buffer 96KB and --delay 250us mean on the command
// line what rate: 995Mbit, size: 96KB and delay: 250us mean in the YAML.

// bareNumber matches a number without a unit.
var bareNumber = regexp.MustCompile(`^\s*[0-9]+(?:\.[0-9]*)?\s*$`)

// rateValue is a bit rate in bit/s, written with its unit as the config's
// rates are (config.ParseRate): 995Mbit, 10Gbit, 25Gbps, 2.5Gbit/s. A
// bare number other than 0 is refused: before the grammar was one, demo
// --rate took Mbit/s and endpoint send --rate bit/s, so a bare number
// would keep one of them wrong by a factor of a million without a word.
type rateValue struct{ bps *int64 }

func (v rateValue) Set(s string) error {
	if bareNumber.MatchString(s) && strings.TrimSpace(s) != "0" {
		return fmt.Errorf("%q has no unit; write it with one, as in the config: 995Mbit, 10Gbit, 25Gbps", s)
	}
	n, err := config.ParseRate(s)
	if err != nil {
		return err
	}
	*v.bps = n
	return nil
}

func (v rateValue) String() string {
	if v.bps == nil || *v.bps == 0 {
		return "0"
	}
	return config.FormatRate(*v.bps)
}

func (rateValue) placeholder() string { return "RATE" }

// rateFlag defines a rate flag with default def bit/s.
func rateFlag(fs *flag.FlagSet, name string, def int64, usage string) *int64 {
	p := new(int64)
	*p = def
	fs.Var(rateValue{p}, name, usage)
	return p
}

// sizeValue is a size in bytes, written as the config's sizes are
// (config.ParseSize): 1500, 96KB, 64KiB, 2MB. A bare number is bytes,
// as it always was on every command and in the config. set records
// whether the flag was given, for flags whose default is not a size.
type sizeValue struct {
	n   *int64
	set bool
}

func (v *sizeValue) Set(s string) error {
	n, err := config.ParseSize(s)
	if err != nil {
		return err
	}
	*v.n, v.set = n, true
	return nil
}

func (v *sizeValue) String() string {
	if v == nil || v.n == nil {
		return "0"
	}
	return config.FormatSize(*v.n)
}

func (*sizeValue) placeholder() string { return "SIZE" }

// sizeFlag defines a size flag with default def bytes.
func sizeFlag(fs *flag.FlagSet, name string, def int64, usage string) *int64 {
	v := &sizeValue{n: new(int64)}
	*v.n = def
	fs.Var(v, name, usage)
	return v.n
}

// durationValue is a duration in Go's syntax, as the config's durations
// are (config.ParseDuration): 250us, 1.5ms, 2s; µs for us; a bare 0 is
// zero and any other bare number is refused.
type durationValue struct{ d *time.Duration }

func (v durationValue) Set(s string) error {
	d, err := config.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func (v durationValue) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.String()
}

func (durationValue) placeholder() string { return "DURATION" }

// durationFlag defines a duration flag with default def.
func durationFlag(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = def
	fs.Var(durationValue{p}, name, usage)
	return p
}

// genRateValue is the load generator's rate: a bit rate as rateValue
// reads it, or frames per second (500kpps, 1Mpps), or max.
type genRateValue struct{ r *loadgen.Rate }

func (v genRateValue) Set(s string) error {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "max" || strings.HasSuffix(strings.TrimSuffix(t, "/s"), "pps") {
		r, err := loadgen.ParseRate(s)
		if err != nil {
			return err
		}
		*v.r = r
		return nil
	}
	var bps int64
	if err := (rateValue{&bps}).Set(s); err != nil {
		return fmt.Errorf("%w; or frames/s: 500kpps, 1Mpps; or max", err)
	}
	if bps == 0 {
		*v.r = loadgen.Rate{}
		return nil
	}
	r, err := loadgen.ParseRate(strconv.FormatInt(bps, 10) + "bit") // loadgen's bounds
	if err != nil {
		return err
	}
	*v.r = r
	return nil
}

func (v genRateValue) String() string {
	if v.r == nil {
		return "max"
	}
	return v.r.String()
}

func (genRateValue) placeholder() string { return "RATE" }

// optInt is an integer flag that may be left unset.
type optInt struct{ v *int }

func (o *optInt) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.Itoa(*o.v)
}

func (o *optInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	o.v = &n
	return nil
}

func (*optInt) placeholder() string { return "N" }

// logLevelFlag defines --log-level, for the commands that log; def is
// the level when the flag is not given ("" where the command decides).
func logLevelFlag(fs *flag.FlagSet, def, usage string) *string {
	if usage == "" {
		usage = "log level: debug, info, warn or error"
	}
	return fs.String("log-level", def, usage)
}
