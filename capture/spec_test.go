package capture

import (
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

func TestSpecValidate(t *testing.T) {
	ok := Spec{Port: "c", Path: "x"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("minimal spec: %v", err)
	}
	d := ok.withDefaults()
	if d.Direction != Egress || d.Filter != All || d.Format != PCAPNG || d.SnapLen != DefaultSnapLen || d.Ring != DefaultRing {
		t.Fatalf("defaults %+v", d)
	}
	if d := (Spec{Filter: Dropped}).withDefaults(); d.Direction != Drops {
		t.Fatalf("filter dropped defaults to direction %s, want drops", d.Direction)
	}
	for _, c := range []struct {
		mod  func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Port = "" }, "port: empty"},
		{func(s *Spec) { s.Direction = "both" }, `direction: "both"; want ingress, egress or drops`},
		{func(s *Spec) { s.Filter = "ce" }, `filter: "ce"; want all, marked, dropped or trimmed`},
		{func(s *Spec) { s.Filter, s.Direction = Marked, Ingress }, "filter: marked with direction ingress"},
		{func(s *Spec) { s.Filter, s.Direction = Dropped, Egress }, "filter: dropped with direction egress"},
		{func(s *Spec) { s.Queue = intp(256) }, "queue: 256 outside [0, 255]"},
		{func(s *Spec) { s.Queue, s.Direction = intp(1), Ingress }, "queue: 1 with direction ingress"},
		{func(s *Spec) { s.DSCP = intp(64) }, "dscp: 64 outside [0, 63]"},
		{func(s *Spec) { s.DSCP = intp(-1) }, "dscp: -1 outside [0, 63]"},
		{func(s *Spec) { s.Format = "erf" }, `format: "erf"; want pcap or pcapng`},
		{func(s *Spec) { s.Path = "" }, "path: empty"},
		{func(s *Spec) { s.SnapLen = 10 }, "snaplen: 10 outside [64, 65535]"},
		{func(s *Spec) { s.SnapLen = 70000 }, "snaplen: 70000 outside [64, 65535]"},
		{func(s *Spec) { s.MaxBytes = 100 }, "max_bytes: 100 outside [1024, 1099511627776]"},
		{func(s *Spec) { s.MaxBytes = -2 }, "max_bytes: -2 outside [1024, 1099511627776] (or -1: never rotate)"},
		{func(s *Spec) { s.MaxBytes, s.MaxFiles = 1<<20, -2 }, "max_files: -2 outside [1, 100000] (or -1: keep all)"},
		{func(s *Spec) { s.MaxBytes, s.MaxFiles = Unlimited, 3 }, "max_files: 3 with max_bytes -1 (never rotate)"},
		{func(s *Spec) { s.Ring = 1000 }, "ring: 1000 is not a power of two in [16, 1048576]"},
		{func(s *Spec) { s.Ring, s.SnapLen = 1<<20, 65535 }, "ring: 1048576 slots of snaplen 65535"},
	} {
		s := ok
		c.mod(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v; want %q", s, err, c.want)
		}
	}
}

func TestResolve(t *testing.T) {
	names := []string{"a", "b", "7"}
	for _, c := range []struct {
		in   string
		want int
	}{{"a", 0}, {"1", 1}, {"7", 2}, {"2", 2}} {
		if got, err := resolvePort(c.in, names); err != nil || got != c.want {
			t.Errorf("resolvePort(%q) = %d, %v; want %d (names before indices)", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ dir, in, want string }{
		{"/cap", "x/../y.pcap", "y.pcap"},
		{"/cap", "y.pcap", "y.pcap"},
		{"/cap", "/cap/d/y.pcap", "d/y.pcap"},
		{"/cap", "..y.pcap", "..y.pcap"},
		{"/cap", "/capture/y", ""},
		{"/cap", "d/../../y", ""},
		{"/cap", "/cap", ""},
		{"/cap", "", ""},
	} {
		got, err := localName(c.dir, c.in)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("localName(%q, %q) = %q, %v; want %q", c.dir, c.in, got, err, c.want)
		}
	}
	for seq, want := range []string{"/d/m.pcapng", "/d/m.1.pcapng", "/d/m.2.pcapng"} {
		if got := rotatedName("/d/m.pcapng", seq); got != want {
			t.Errorf("rotatedName(%d) = %q, want %q", seq, got, want)
		}
	}
	if got := rotatedName("/d/m", 3); got != "/d/m.3" {
		t.Errorf("rotatedName without extension = %q", got)
	}
}

// TestComment checks the comment text of each kind of record.
func TestComment(t *testing.T) {
	w := newFileWriter(Spec{}, nil, "", "", "eth1", wall0, 0)
	for _, c := range []struct {
		r    record
		want string
	}{
		{record{kind: dataplane.EventEgress, queue: 1, marker: "mqecn", value: 41000, threshold: 32000, sojourn: 212_000},
			"egress port eth1 queue 1: marked CE by mqecn (value 41000, threshold 32000); sojourn 212.000us"},
		{record{kind: dataplane.EventEgress, queue: 0, sojourn: 3_125},
			"egress port eth1 queue 0: sent unmarked; sojourn 3.125us"},
		{record{kind: dataplane.EventDrop, queue: 0, drop: dataplane.DropDynamicThreshold, sojourn: -1},
			"drop port eth1 queue 0: dropped (dynamic_threshold)"},
		{record{kind: dataplane.EventDrop, queue: 2, drop: dataplane.DropDequeueMarker, marker: "codel", value: 7_000_000, threshold: 5_000_000, sojourn: 7_000_000},
			"drop port eth1 queue 2: dropped (dequeue_marker) by codel (value 7000000, threshold 5000000); sojourn 7000.000us"},
		{record{kind: dataplane.EventDrop, queue: -1, drop: dataplane.DropMalformed, sojourn: -1},
			"drop port eth1: dropped (malformed)"},
		{record{kind: dataplane.EventIngress, queue: -1, sojourn: -1}, "ingress port eth1: received"},
	} {
		if got := string(w.comment(nil, &c.r, nil)); got != c.want {
			t.Errorf("comment:\n got %q\nwant %q", got, c.want)
		}
	}
	long := record{kind: dataplane.EventEgress, marker: strings.Repeat("m", 2000), sojourn: -1}
	if n := len(w.comment(nil, &long, nil)); n != maxComment {
		t.Errorf("a %d-byte comment was not cut to %d", n, maxComment)
	}
}

func TestFrameDSCP(t *testing.T) {
	for _, c := range []struct {
		f    []byte
		dscp uint8
		ok   bool
	}{
		{append(make([]byte, 12), 0x08, 0x00, 0x45, 46<<2|3), 46, true},
		{append(make([]byte, 12), 0x86, 0xdd, 0x60|46>>2, (46&3)<<6|0x0f), 46, true},
		{append(make([]byte, 12), 0x81, 0x00, 0, 10, 0x88, 0xa8, 0, 20, 0x08, 0x00, 0x45, 8<<2), 8, true},                     // behind two tags
		{append(make([]byte, 12), 0x81, 0x00, 0, 10, 0x81, 0x00, 0, 20, 0x81, 0x00, 0, 30, 0x08, 0x00, 0x45, 8<<2), 0, false}, // three tags are more than the switch parses
		{append(make([]byte, 12), 0x08, 0x06, 0x00, 0x01), 0, false},
		{append(make([]byte, 12), 0x08, 0x00, 0x65, 0), 0, false}, // version 6 in an IPv4 EtherType
		{append(make([]byte, 12), 0x08, 0x00, 0x45), 0, false},
		{make([]byte, 10), 0, false},
	} {
		d, ok := frameDSCP(c.f)
		if c.ok != ok || ok && d != c.dscp {
			t.Errorf("frameDSCP(% x) = %d, %v; want %d, %v", c.f, d, ok, c.dscp, c.ok)
		}
	}
}
