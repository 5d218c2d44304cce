package xdpgen

import (
	"strings"
	"testing"
)

func TestConfigErrors(t *testing.T) {
	ok := func() Config {
		return Config{Template: make([]byte, 100), MaxLen: 100, Flows: 2, SeqOff: 48, TimeOff: 52,
			Cycles: [][]Entry{{{Len: 60, Flow: 0}, {Len: 100, Flow: 1}}}}
	}
	if c := ok(); c.validate() != nil {
		t.Fatalf("valid config refused: %v", c.validate())
	}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.MaxLen = 59 }, "max_len"},
		{func(c *Config) { c.Template = c.Template[:99] }, "template"},
		{func(c *Config) { c.Cycles = nil }, "cycles"},
		{func(c *Config) { c.Cycles = [][]Entry{{}} }, "cycles[0]: empty"},
		{func(c *Config) { c.Cycles[0][1].Len = 101 }, "cycles[0][1]: length 101"},
		{func(c *Config) { c.Cycles[0][0].Len = 59 }, "cycles[0][0]: length 59"},
		{func(c *Config) { c.Cycles[0][1].Flow = 2 }, "cycles[0][1]: flow 2"},
		{func(c *Config) { c.Flows = 0 }, "flows"},
		{func(c *Config) { c.SeqOff = 57 }, "seq_off"},
		{func(c *Config) { c.TimeOff = 53 }, "time_off"},
		{func(c *Config) { c.Redirect = -1 }, "redirect"},
	} {
		cfg := ok()
		c.edit(&cfg)
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
}
