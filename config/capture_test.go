package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/capture"
)

// TestCaptureSection checks the capture section's defaults and that a
// valid capture comes out as the capture.Spec the Manager starts.
func TestCaptureSection(t *testing.T) {
	c := mustParse(t, "ports: [{name: s0}, {name: s1, queues: 4}]\n")
	if c.Capture.Dir != DefaultCaptureDir || len(c.Capture.Captures) != 0 {
		t.Errorf("no capture section: %+v, want dir %q and no captures", c.Capture, DefaultCaptureDir)
	}

	c = mustParse(t, `
capture:
  dir: /var/lib/ecnswitch/captures/
  captures:
    - {port: s1, filter: marked}
    - {port: s1, filter: dropped, format: pcap}
    - port: s0
      direction: ingress
      dscp: 46
      path: exp1/ef.pcapng
      snaplen: 128
      max_bytes: 1MiB
      max_files: 3
      ring: 1024
    - {port: s1, queue: 3, path: q3.pcapng}
ports: [{name: s0}, {name: s1, queues: 4}]
`)
	q3, dscp46 := 3, 46
	want := []capture.Spec{
		{Port: "s1", Direction: capture.Egress, Filter: capture.Marked, Format: capture.PCAPNG, Path: "s1-egress-marked.pcapng", SnapLen: 256, Ring: 4096, MaxBytes: 64 << 20, MaxFiles: 8},
		{Port: "s1", Direction: capture.Drops, Filter: capture.Dropped, Format: capture.PCAP, Path: "s1-drops-dropped.pcap", SnapLen: 256, Ring: 4096, MaxBytes: 64 << 20, MaxFiles: 8},
		{Port: "s0", Direction: capture.Ingress, Filter: capture.All, DSCP: &dscp46, Format: capture.PCAPNG, Path: "exp1/ef.pcapng",
			SnapLen: 128, MaxBytes: 1 << 20, MaxFiles: 3, Ring: 1024},
		{Port: "s1", Direction: capture.Egress, Filter: capture.All, Queue: &q3, Format: capture.PCAPNG, Path: "q3.pcapng", SnapLen: 256, Ring: 4096, MaxBytes: 64 << 20, MaxFiles: 8},
	}
	if c.Capture.Dir != "/var/lib/ecnswitch/captures" {
		t.Errorf("dir %q, want it cleaned to /var/lib/ecnswitch/captures", c.Capture.Dir)
	}
	if got, w := fmt.Sprintf("%+v", specStrings(c.Capture.Captures)), fmt.Sprintf("%+v", specStrings(want)); got != w {
		t.Errorf("captures:\n%s\nwant:\n%s", got, w)
	}
	for i, s := range c.Capture.Captures {
		if err := s.Validate(); err != nil {
			t.Errorf("captures[%d] does not validate as a capture.Spec: %v", i, err)
		}
	}

	ex, err := Load(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	if cs := ex.Capture.Captures; len(cs) != 1 || cs[0].Path != "p3-egress-marked.pcapng" || cs[0].MaxBytes != 100e6 || cs[0].MaxFiles != 10 {
		t.Errorf("the example's captures: %+v", cs)
	}
}

// specStrings prints specs with their pointers dereferenced.
func specStrings(ss []capture.Spec) []string {
	var out []string
	for _, s := range ss {
		q, d := "-", "-"
		if s.Queue != nil {
			q = fmt.Sprint(*s.Queue)
		}
		if s.DSCP != nil {
			d = fmt.Sprint(*s.DSCP)
		}
		s.Queue, s.DSCP = nil, nil
		out = append(out, fmt.Sprintf("%+v queue=%s dscp=%s", s, q, d))
	}
	return out
}

// TestCaptureErrors checks that every bad capture key is reported at its
// own path, with the value and what is allowed.
func TestCaptureErrors(t *testing.T) {
	const ports = "ports: [{name: s0}, {name: s1, queues: 4}]\n"
	for _, tc := range []struct {
		name, yaml, key, msg string
	}{
		{"unknown port", "capture: {captures: [{port: s9, filter: marked}]}\n" + ports, "capture.captures[0].port", `"s9" is not a port; ports are s0, s1`},
		{"port by index is not a name", "capture: {captures: [{port: '1'}]}\n" + ports, "capture.captures[0].port", `"1" is not a port`},
		{"missing port", "capture: {captures: [{filter: marked}]}\n" + ports, "capture.captures[0].port", "missing; want a port name (s0, s1)"},
		{"unknown key", "capture: {captures: [{port: s0, filer: marked}]}\n" + ports, "capture.captures[0].filer", "unknown key; allowed here: port, direction, filter"},
		{"unknown section key", "capture: {directory: x}\n" + ports, "capture.directory", "unknown key; allowed here: dir, quota, ring_memory, captures"},
		{"empty dir", "capture: {dir: ''}\n" + ports, "capture.dir", `"": want a directory`},
		{"direction", "capture: {captures: [{port: s0, direction: both}]}\n" + ports, "capture.captures[0].direction", `"both"; want ingress, egress or drops`},
		{"filter", "capture: {captures: [{port: s0, filter: ce}]}\n" + ports, "capture.captures[0].filter", `"ce"; want all, marked, dropped or trimmed`},
		{"marked on ingress", "capture: {captures: [{port: s0, direction: ingress, filter: marked}]}\n" + ports, "capture.captures[0].filter", "marks are seen only on egress"},
		{"queue beyond the port's", "capture: {captures: [{port: s1, queue: 4}]}\n" + ports, "capture.captures[0].queue", "4 outside [0, 3] (port s1 has 4 queues)"},
		{"negative queue", "capture: {captures: [{port: s0, queue: -1}]}\n" + ports, "capture.captures[0].queue", "-1 outside [0, 7]"},
		{"queue on ingress", "capture: {captures: [{port: s0, direction: ingress, queue: 1}]}\n" + ports, "capture.captures[0].queue", "received packets have no queue yet"},
		{"dscp", "capture: {captures: [{port: s0, dscp: 64}]}\n" + ports, "capture.captures[0].dscp", "64 outside [0, 63]"},
		{"format", "capture: {captures: [{port: s0, format: erf}]}\n" + ports, "capture.captures[0].format", `"erf"; want pcap or pcapng`},
		{"snaplen", "capture: {captures: [{port: s0, snaplen: 10}]}\n" + ports, "capture.captures[0].snaplen", "10 outside [64, 65535]"},
		{"max_bytes", "capture: {captures: [{port: s0, max_bytes: 100}]}\n" + ports, "capture.captures[0].max_bytes", "100 outside [1024, 1099511627776]"},
		{"max_bytes unit", "capture: {captures: [{port: s0, max_bytes: 1 pint}]}\n" + ports, "capture.captures[0].max_bytes", "unknown unit"},
		{"max_files without rotation", "capture: {captures: [{port: s0, max_bytes: 0, max_files: 3}]}\n" + ports, "capture.captures[0].max_files", "never rotate"},
		{"quota too large", "capture: {quota: 20TiB}\n" + ports, "capture.quota", "outside [0, 16TiB] (0: no quota)"},
		{"ring memory too small", "capture: {ring_memory: 1KiB}\n" + ports, "capture.ring_memory", "outside [1MiB, 64GiB]"},
		{"ring not a power of two", "capture: {captures: [{port: s0, ring: 1000}]}\n" + ports, "capture.captures[0].ring", "1000 is not a power of two in [16, 1048576]"},
		{"ring too big for snaplen", "capture: {captures: [{port: s0, ring: 1048576, snaplen: 65535}]}\n" + ports, "capture.captures[0].ring", "more than 268435456"},
		{"absolute path", "capture: {captures: [{port: s0, path: /etc/passwd}]}\n" + ports, "capture.captures[0].path", `"/etc/passwd" is absolute; want a file name relative to capture.dir`},
		{"path leaves dir", "capture: {captures: [{port: s0, path: ../x.pcapng}]}\n" + ports, "capture.captures[0].path", `"../x.pcapng" leaves capture.dir`},
		{"same file twice", "capture: {captures: [{port: s0, path: a.pcapng}, {port: s1, path: ./a.pcapng}]}\n" + ports, "capture.captures[1].path", `"a.pcapng" is also written by capture.captures[0]`},
		{"same default file twice", "capture: {captures: [{port: s1, filter: marked}, {port: s1, filter: marked, queue: 1}]}\n" + ports, "capture.captures[1].path", `"s1-egress-marked.pcapng" is also written by capture.captures[0]`},
		{"wrong type", "capture: {captures: [{port: s0, snaplen: big}]}\n" + ports, "capture.captures[0].snaplen", `"big" is not an integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error for\n%s", tc.yaml)
			}
			var all []string
			for _, e := range errorsOf(err) {
				if e.Key == tc.key && strings.Contains(e.Msg, tc.msg) {
					if e.Line == 0 {
						t.Errorf("%s: no line number", e)
					}
					return
				}
				all = append(all, fmt.Sprintf("%q: %s", e.Key, e.Msg))
			}
			t.Errorf("want key %q with %q; got:\n%s", tc.key, tc.msg, strings.Join(all, "\n"))
		})
	}
}

// Every capture is checked: errors in two captures are both reported.
func TestCaptureErrorsAll(t *testing.T) {
	_, err := Parse([]byte("capture:\n  captures:\n    - {port: x}\n    - {port: s0, snaplen: 1}\nports: [{name: s0}]\n"))
	if keys := errorKeys(err); keys != "capture.captures[0].port capture.captures[1].snaplen" {
		t.Errorf("errors at %v:\n%v", keys, err)
	}
}

func TestCaptureDefaults(t *testing.T) {
	for _, tc := range []struct {
		in   capture.Spec
		want string
	}{
		{capture.Spec{Port: "s0"}, "s0-egress-all.pcapng"},
		{capture.Spec{Port: "s0", Filter: capture.Dropped}, "s0-drops-dropped.pcapng"},
		{capture.Spec{Port: "s0", Direction: capture.Ingress, Format: capture.PCAP}, "s0-ingress-all.pcap"},
		{capture.Spec{Port: "s0", Path: "mine.pcap"}, "mine.pcap"},
	} {
		if got := CaptureDefaults(tc.in); got.Path != tc.want || got.SnapLen != capture.DefaultSnapLen || got.Ring != capture.DefaultRing || got.Validate() != nil {
			t.Errorf("CaptureDefaults(%+v) = %+v (valid: %v), want path %s", tc.in, got, got.Validate(), tc.want)
		}
	}
}

// The default capture directory does not depend on where the daemon
// starts: under sudo, a relative default let the caller's working
// directory decide where root writes (issue 12).
func TestDefaultCaptureDirIsAbsolute(t *testing.T) {
	c := mustParse(t, "ports: [{name: s0}]\n")
	if !filepath.IsAbs(c.Capture.Dir) {
		t.Errorf("default capture.dir %q is relative to the working directory", c.Capture.Dir)
	}
}

// Captures rotate by default; a written 0 turns rotation, or the file
// limit, off. quota 0 turns the directory's quota off.
func TestCaptureRotationAndQuota(t *testing.T) {
	c := mustParse(t, `
capture:
  quota: 0
  ring_memory: 64MiB
  captures:
    - {port: s0, path: a.pcap}
    - {port: s0, path: b.pcap, max_bytes: 0}
    - {port: s0, path: c.pcap, max_files: 0}
ports: [{name: s0}]
`)
	cs := c.Capture.Captures
	if c.Capture.Quota >= 0 || c.Capture.RingMemory != 64<<20 || len(cs) != 3 {
		t.Fatalf("capture %+v", c.Capture)
	}
	for i, want := range [][2]int64{{64 << 20, 8}, {capture.Unlimited, 0}, {64 << 20, capture.Unlimited}} {
		if cs[i].MaxBytes != want[0] || int64(cs[i].MaxFiles) != want[1] {
			t.Errorf("captures[%d]: max_bytes %d, max_files %d; want %d and %d", i, cs[i].MaxBytes, cs[i].MaxFiles, want[0], want[1])
		}
	}
}
