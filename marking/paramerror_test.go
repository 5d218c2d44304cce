package marking

import (
	"errors"
	"testing"
)

// Constructors' errors are *ParamError naming the scheme and the key, so
// that a config layer can point at the key without reading the text.
func TestParamErrorNamesSchemeAndKey(t *testing.T) {
	for _, c := range []struct {
		name        string
		err         error
		scheme, key string
		sentinel    error
	}{
		{"red kmin above kmax", func() error {
			_, err := NewRED(REDConfig{KMin: Bytes(40_000), KMax: Bytes(30_000)}, Enqueue, 1)
			return err
		}(), "red", "kmin", nil},
		{"red pmax", func() error {
			_, err := NewRED(REDConfig{KMin: Bytes(1), KMax: Bytes(2), PMax: 1.5}, Enqueue, 1)
			return err
		}(), "red", "pmax", nil},
		{"codel target", func() error {
			_, err := NewCoDel(CoDelConfig{Target: 3e6, Interval: 2e6}, Dequeue, 1)
			return err
		}(), "codel", "target", nil},
		{"tcn at enqueue", func() error {
			_, err := NewTCN(TCNConfig{Threshold: 100_000}, Enqueue, 1)
			return err
		}(), "tcn", "", ErrDequeueOnly},
		{"mqecn at dequeue", func() error {
			_, err := NewMQECN(MQECNConfig{RTT: 100_000, LineRate: 1e9}, Dequeue, 1)
			return err
		}(), "mqecn", "", ErrEnqueueOnly},
		{"bcc without rtt", func() error {
			_, err := NewBCC(BCCConfig{KMin: Bytes(1), KMax: Bytes(2)}, Enqueue, 1)
			return err
		}(), "bcc", "rtt", nil},
	} {
		var pe *ParamError
		if !errors.As(c.err, &pe) {
			t.Errorf("%s: %v is not a *ParamError", c.name, c.err)
			continue
		}
		if pe.Scheme != c.scheme || pe.Key != c.key {
			t.Errorf("%s: scheme %q key %q, want %q %q (%v)", c.name, pe.Scheme, pe.Key, c.scheme, c.key, c.err)
		}
		if c.sentinel != nil && !errors.Is(c.err, c.sentinel) {
			t.Errorf("%s: %v does not wrap %v", c.name, c.err, c.sentinel)
		}
		if got, want := c.err.Error(), "marking: "+pe.Scheme+": "+pe.Msg; got != want {
			t.Errorf("%s: Error() = %q, want %q", c.name, got, want)
		}
	}
}
