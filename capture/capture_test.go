package capture

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/internal/testenv"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
)

// wall0 anchors the captures' timestamps in the tests: with the virtual
// clock at 0 when a capture starts, a packet stamped t by the switch is at
// wall0 + t in the file.
var wall0 = time.Unix(1_700_000_000, 0)

func fixedWall() time.Time { return wall0 }

const (
	congRate = 100_000_000 // bit/s on every link and on the shaped port
	congK    = 15_000      // DCTCP cut-off K in bytes (RED with KMin = KMax, 000 §3.3.1)
	congT    = 1_000_000   // TCN sojourn threshold in ns
	congSize = 1000        // frame size
	congN    = 400         // frames per sender
	congDT   = 1000        // poll step in ns
)

// congestion builds two senders (ports a and b) patched into port c,
// shaped at congRate with two DWRR queues over a 60 KB Dynamic-Threshold
// pool, and one marker on c: DCTCP's cut-off at enqueue, or TCN at dequeue.
// (One marker, not both: a packet both chains mark counts in MarkedEnq and
// in MarkedDeq, so their sum would not be the number of packets marked.)
func congestion(t *testing.T, marker string) *dataplanetest.Rig {
	cfg := dataplane.Config{Pools: []buffer.PoolConfig{{Size: 60_000}}}
	cfg.Ports = []dataplane.PortConfig{dataplanetest.PortConfig("a", 1, congRate), dataplanetest.PortConfig("b", 1, congRate), dataplanetest.PortConfig("c", 2, congRate)}
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}, {From: 1, To: 2}}
	switch marker {
	case "dctcp":
		cfg.Ports[2].Enqueue = []dataplane.MarkerSpec{{Name: "dctcp", New: func(q int) (marking.Marker, error) {
			return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(congK)), marking.Enqueue, q)
		}}}
	case "tcn":
		cfg.Ports[2].Dequeue = []dataplane.MarkerSpec{{Name: "tcn", New: func(q int) (marking.Marker, error) {
			return marking.NewTCN(marking.TCNConfig{Threshold: congT}, marking.Dequeue, q)
		}}}
	default:
		t.Fatalf("no marker %q", marker)
	}
	return dataplanetest.New(t, cfg, memport.Link{Rate: congRate})
}

// sendCongestion sends congN frames from each of a and b at line rate into
// c, which drains at line rate: a alternates ECT(0) frames of DSCP 0
// (queue 0) and DSCP 8 (queue 1); b sends Not-ECT to queue 0, ECT(1) to
// queue 1, ECT(1) to queue 0, ECT(1) to queue 1, and again. Then it drains
// the switch.
func sendCongestion(t *testing.T, r *dataplanetest.Rig) {
	a := [][]byte{
		dataplanetest.Frame(t, 0, 2, packettest.Options{Size: congSize, ECN: packet.ECT0}),
		dataplanetest.Frame(t, 0, 2, packettest.Options{Size: congSize, ECN: packet.ECT0, DSCP: 8}),
	}
	b := [][]byte{
		dataplanetest.Frame(t, 1, 2, packettest.Options{Size: congSize}),
		dataplanetest.Frame(t, 1, 2, packettest.Options{Size: congSize, ECN: packet.ECT1, DSCP: 8}),
		dataplanetest.Frame(t, 1, 2, packettest.Options{Size: congSize, ECN: packet.ECT1}),
		dataplanetest.Frame(t, 1, 2, packettest.Options{Size: congSize, ECN: packet.ECT1, DSCP: 8}),
	}
	for i := 0; i < congN; i++ {
		r.Send(0, a[i%len(a)])
		r.Send(1, b[i%len(b)])
	}
	r.Drain(congDT)
}

func intp(v int) *int { return &v }

var (
	markedRE = regexp.MustCompile(`^egress port c queue ([01]): marked CE by (dctcp|tcn) \(value (\d+), threshold (\d+)\); sojourn (\d+)\.(\d{3})us$`)
	sentRE   = regexp.MustCompile(`^egress port c queue ([01]): sent unmarked; sojourn (\d+)\.(\d{3})us$`)
	dropRE   = regexp.MustCompile(`^drop port c queue ([01]): dropped \(([a-z_]+)\)( by (dctcp|tcn) \(value \d+, threshold \d+\))?(; sojourn \d+\.\d{3}us)?$`)
)

// sojournOf returns the sojourn in ns that a comment's match carries.
func sojournOf(us, frac string) int64 {
	a, _ := strconv.ParseInt(us, 10, 64)
	b, _ := strconv.ParseInt(frac, 10, 64)
	return a*1000 + b
}

// TestMarkedCaptureHoldsExactlyTheMarkedPackets is the test: under
// congestion, every packet the switch counted as CE-marked on the port
// (MarkedEnq + MarkedDeq) is in the marked-only egress capture, with CE
// set, and nothing else is — in pcap and in pcapng, whose comments name the
// marker and what it compared. Captures of all egress packets, of drops,
// of one queue and of the senders' ingress run at the same time and are
// checked against the switch's counters too.
func TestMarkedCaptureHoldsExactlyTheMarkedPackets(t *testing.T) {
	for _, marker := range []string{"dctcp", "tcn"} {
		t.Run(marker, func(t *testing.T) { testMarkedCapture(t, marker) })
	}
}

func testMarkedCapture(t *testing.T, marker string) {
	r := congestion(t, marker)
	dir := t.TempDir()
	m := New(r.Switch, r.Clock, Options{Dir: dir, Wall: fixedWall})
	specs := map[string]Spec{
		"marked.pcapng":  {Port: "c", Filter: Marked, Path: "marked.pcapng"},
		"marked.pcap":    {Port: "2", Filter: Marked, Format: PCAP, Path: "marked.pcap"},
		"egress.pcapng":  {Port: "c", Path: "egress.pcapng"},
		"drops.pcapng":   {Port: "c", Filter: Dropped, Path: "drops.pcapng"},
		"queue1.pcap":    {Port: "c", Filter: Marked, Queue: intp(1), Format: PCAP, Path: "queue1.pcap"},
		"ingress-b.pcap": {Port: "b", Direction: Ingress, Format: PCAP, SnapLen: 64, Path: "ingress-b.pcap"},
	}
	ids := map[string]int{}
	for name, s := range specs {
		id, err := m.Start(s)
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		ids[name] = id
	}
	sendCongestion(t, r)
	end := r.Clock.Now()
	final := map[string]Status{}
	for name, id := range ids {
		st, err := m.Stop(id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Running || st.SkippedRingFull != 0 || st.LostWriteError != 0 || st.Error != "" || st.Files != 1 {
			t.Fatalf("%s: final status %+v; want stopped, nothing skipped or lost, one file", name, st)
		}
		final[name] = st
	}
	if len(m.Status()) != 0 {
		t.Fatalf("captures still running after Stop: %+v", m.Status())
	}

	stats := r.Switch.Stats().Ports[2]
	var marked, markedQ1 uint64
	for q, qs := range stats.Queues {
		marked += qs.MarkedEnq + qs.MarkedDeq
		if q == 1 {
			markedQ1 = qs.MarkedEnq + qs.MarkedDeq
		}
	}
	var drops uint64
	for _, n := range stats.Drops {
		drops += n
	}
	markerDrop := map[string]string{"dctcp": "enqueue_marker", "tcn": "dequeue_marker"}[marker]
	if markedQ1 == 0 || marked == markedQ1 || stats.Drops[markerDrop] == 0 || stats.Drops["dynamic_threshold"] == 0 {
		t.Fatalf("the congestion did not exercise marks in both queues, marker and buffer drops: %+v", stats)
	}

	if d := interfaceDescription(t, filepath.Join(dir, "egress.pcapng")); !strings.HasSuffix(d,
		"; timestamps on the switch clock (virtual), ingress stamps by link") {
		t.Errorf("if_description %q does not say which clocks stamped the packets", d)
	}

	read := func(name string) []pkt {
		s := specs[name].withDefaults()
		ps := readFile(t, s.Format, filepath.Join(dir, name), s.SnapLen)
		if uint64(len(ps)) != final[name].Written {
			t.Fatalf("%s holds %d packets, status says %d written", name, len(ps), final[name].Written)
		}
		return ps
	}

	// The marked-only captures: exactly the marked packets, all CE.
	ng, pc := read("marked.pcapng"), read("marked.pcap")
	if uint64(len(ng)) != marked || uint64(len(pc)) != marked {
		t.Fatalf("marked captures hold %d (pcapng) and %d (pcap) packets; the switch marked %d", len(ng), len(pc), marked)
	}
	for i, p := range ng {
		if p.ecn(t) != packet.CE || pc[i].ecn(t) != packet.CE {
			t.Fatalf("marked packet %d is not CE", i)
		}
		if !p.ts.Equal(pc[i].ts) || !bytes.Equal(p.data, pc[i].data) {
			t.Fatalf("packet %d differs between pcapng (%v) and pcap (%v)", i, p.ts, pc[i].ts)
		}
		if p.flags&3 != 2 {
			t.Fatalf("packet %d: epb_flags %#x, want outbound", i, p.flags)
		}
		c := markedRE.FindStringSubmatch(p.comment)
		if c == nil {
			t.Fatalf("packet %d: comment %q does not say which marker marked it and why", i, p.comment)
		}
		if c[2] != marker {
			t.Fatalf("packet %d: comment %q names the wrong marker", i, p.comment)
		}
		value, _ := strconv.ParseInt(c[3], 10, 64)
		threshold, _ := strconv.ParseInt(c[4], 10, 64)
		sojourn := sojournOf(c[5], c[6])
		switch c[2] {
		case "dctcp": // marks at enqueue when the queue holds ≥ K bytes (000 §3.3.1)
			if threshold != congK || value < congK {
				t.Fatalf("packet %d: dctcp compared %d against %d; want ≥ %d against %d", i, value, threshold, congK, congK)
			}
		case "tcn": // marks at dequeue when the sojourn exceeds T; the value is the sojourn
			if threshold != congT || value <= congT || value != sojourn {
				t.Fatalf("packet %d: tcn compared %d against %d with sojourn %d; want sojourn > %d", i, value, threshold, sojourn, congT)
			}
		}
		// The timestamp is the dequeue time on the switch's clock: a poll
		// instant, after the enqueue instant the sojourn leads back to.
		at := p.ts.Sub(wall0).Nanoseconds()
		if at%congDT != 0 || at > end || (at-sojourn)%congDT != 0 || at-sojourn < congSize*8*1e9/congRate {
			t.Fatalf("packet %d: dequeued at %d ns with sojourn %d ns; want poll instants in (0, %d]", i, at, sojourn, end)
		}
	}

	// All egress: as many as were sent; CE exactly where the comment says marked,
	// and the marked ones are the marked-only capture's packets.
	all := read("egress.pcapng")
	if uint64(len(all)) != stats.TxPackets {
		t.Fatalf("egress capture holds %d packets, the port sent %d", len(all), stats.TxPackets)
	}
	var ce []pkt
	for i, p := range all {
		isCE := p.ecn(t) == packet.CE
		if isCE != markedRE.MatchString(p.comment) || !isCE && !sentRE.MatchString(p.comment) {
			t.Fatalf("egress packet %d: CE %v with comment %q", i, isCE, p.comment)
		}
		if i > 0 && p.ts.Before(all[i-1].ts) {
			t.Fatalf("egress packet %d at %v before packet %d at %v", i, p.ts, i-1, all[i-1].ts)
		}
		if isCE {
			ce = append(ce, p)
		}
	}
	if len(ce) != len(ng) {
		t.Fatalf("%d CE packets among all egress, %d in the marked capture", len(ce), len(ng))
	}
	for i := range ce {
		if ce[i].key() != ng[i].key() || ce[i].comment != ng[i].comment {
			t.Fatalf("CE packet %d of the egress capture differs from the marked capture's", i)
		}
	}

	// One queue.
	if q1 := read("queue1.pcap"); uint64(len(q1)) != markedQ1 {
		t.Fatalf("queue 1 capture holds %d packets, the switch marked %d in queue 1", len(q1), markedQ1)
	}

	// Drops, by reason.
	dr := read("drops.pcapng")
	if uint64(len(dr)) != drops {
		t.Fatalf("drops capture holds %d packets, the switch dropped %d", len(dr), drops)
	}
	reasons := map[string]uint64{}
	for i, p := range dr {
		c := dropRE.FindStringSubmatch(p.comment)
		if c == nil || p.flags != 0 {
			t.Fatalf("drop %d: comment %q flags %#x", i, p.comment, p.flags)
		}
		reasons[c[2]]++
		if marker := strings.HasSuffix(c[2], "_marker"); marker != (c[3] != "") {
			t.Fatalf("drop %d: %q names a marker iff a marker dropped it", i, p.comment)
		}
		if strings.HasSuffix(c[2], "_marker") && p.ecn(t) != packet.NotECT {
			t.Fatalf("drop %d: the marker dropped an ECN-capable packet: %q", i, p.comment)
		}
		if (c[2] == "dequeue_marker") != (c[5] != "") {
			t.Fatalf("drop %d: %q has a sojourn iff it was dropped at dequeue", i, p.comment)
		}
	}
	for reason, n := range stats.Drops {
		if reasons[reason] != n {
			t.Errorf("drops capture has %d %s drops, the switch counted %d (all: %v vs %v)", reasons[reason], reason, n, reasons, stats.Drops)
		}
	}

	// Ingress on b: every frame as received, cut to the snap length, stamped
	// with its arrival time on the wire, one frame time apart.
	in := read("ingress-b.pcap")
	if len(in) != congN || r.Switch.Stats().Ports[1].RxPackets != congN {
		t.Fatalf("ingress capture holds %d packets; b received %d", len(in), r.Switch.Stats().Ports[1].RxPackets)
	}
	notECT := dataplanetest.Frame(t, 1, 2, packettest.Options{Size: congSize})
	for i, p := range in {
		if want := int64(i+1) * congSize * 8 * 1e9 / congRate; p.ts.Sub(wall0).Nanoseconds() != want {
			t.Fatalf("ingress packet %d stamped %v after start, want %d ns", i, p.ts.Sub(wall0), want)
		}
		if p.length != congSize || len(p.data) != 64 || i%4 == 0 && !bytes.Equal(p.data, notECT[:64]) {
			t.Fatalf("ingress packet %d: %d of %d bytes kept, want the frame's first 64", i, len(p.data), p.length)
		}
	}

	t.Run("tshark", func(t *testing.T) {
		testenv.MustHaveCommand(t, "tshark", "tshark")
		tsharkCheck(t, filepath.Join(dir, "marked.pcapng"), len(ng), len(ng), "marked CE by ")
		tsharkCheck(t, filepath.Join(dir, "marked.pcap"), len(pc), len(pc), "")
		tsharkCheck(t, filepath.Join(dir, "egress.pcapng"), len(all), len(ng), "")
	})
}

// tsharkCheck checks that tshark reads path, finds total packets, and
// finds ce of them with ip.dsfield.ecn == 3, each comment containing
// comment.
func tsharkCheck(t *testing.T, path string, total, ce int, comment string) {
	t.Helper()
	count := func(filter string) []string {
		args := []string{"-n", "-r", path, "-T", "fields", "-e", "frame.comment"}
		if filter != "" {
			args = append(args, "-Y", filter)
		}
		out, err := exec.Command("tshark", args...).Output()
		if err != nil {
			t.Fatalf("tshark -r %s: %v", path, err)
		}
		return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	}
	if n := len(count("")); n != total {
		t.Fatalf("tshark reads %d packets in %s, want %d", n, path, total)
	}
	lines := count("ip.dsfield.ecn == 3")
	if len(lines) != ce {
		t.Fatalf("tshark finds %d packets with ip.dsfield.ecn == 3 in %s, want %d", len(lines), path, ce)
	}
	for _, l := range lines {
		if !strings.Contains(l, comment) {
			t.Fatalf("tshark reads comment %q in %s, want it to contain %q", l, path, comment)
		}
	}
}

// TestRingFullSkipsAndCounts stalls the writer so that the ring fills: the
// packets that do not fit are skipped and counted, forwarding is not held
// up, and written + skipped is every marked packet.
func TestRingFullSkipsAndCounts(t *testing.T) {
	r := congestion(t, "dctcp")
	m := New(r.Switch, r.Clock, Options{Dir: t.TempDir(), Wall: fixedWall})
	hold := make(chan struct{})
	m.hold = hold
	id, err := m.Start(Spec{Port: "c", Filter: Marked, Ring: MinRing, Path: "stalled.pcapng"})
	if err != nil {
		t.Fatal(err)
	}
	sendCongestion(t, r)
	var marked uint64
	for _, q := range r.Switch.Stats().Ports[2].Queues {
		marked += q.MarkedEnq + q.MarkedDeq
	}
	st := m.Status()[0]
	if st.SkippedRingFull != marked-MinRing || st.Written != 0 {
		t.Fatalf("stalled writer: %d skipped, %d written of %d marked; want %d skipped", st.SkippedRingFull, st.Written, marked, marked-MinRing)
	}
	close(hold)
	st, err = m.Stop(id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Written != MinRing || st.Written+st.SkippedRingFull != marked {
		t.Fatalf("after the stall: %d written + %d skipped, want %d + %d", st.Written, st.SkippedRingFull, MinRing, marked-MinRing)
	}
	if ps := readPcapng(t, st.File, DefaultSnapLen); len(ps) != MinRing {
		t.Fatalf("file holds %d packets, want the %d the ring held", len(ps), MinRing)
	}
}

// line builds a two-port switch patched 0 → 1, unshaped.
func line(t *testing.T) *dataplanetest.Rig {
	cfg := dataplane.Config{Pools: []buffer.PoolConfig{{Size: 1 << 20}}}
	cfg.Ports = []dataplane.PortConfig{dataplanetest.PortConfig("in", 1, 0), dataplanetest.PortConfig("out", 1, 0)}
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
	return dataplanetest.New(t, cfg, memport.Link{})
}

// TestRotation checks rotation by size and count: files of exactly the
// configured size, numbered name.pcap, name.1.pcap, …, only the newest
// max_files kept, and they hold the newest packets in order.
func TestRotation(t *testing.T) {
	const n, size, perFile, keep = 100, 200, 10, 4
	for _, f := range []Format{PCAP, PCAPNG} {
		t.Run(string(f), func(t *testing.T) {
			r := line(t)
			dir := t.TempDir()
			m := New(r.Switch, r.Clock, Options{Dir: dir, Wall: fixedWall})
			spec := Spec{Port: "out", Format: f, Path: "rot." + string(f), MaxFiles: keep, MaxBytes: MinMaxBytes}
			if f == PCAP {
				// Header, then perFile records of a 16-byte header and the frame.
				spec.MaxBytes = 24 + perFile*(16+size)
			} else {
				// Find the block sizes from a first run's file: SHB+IDB and one EPB.
				spec.MaxBytes = 1 << 20
			}
			id, err := m.Start(spec)
			if err != nil {
				t.Fatal(err)
			}
			if f == PCAPNG {
				// pcapng blocks vary with the comment; measure one and restart.
				r.Send(0, dataplanetest.Frame(t, 0, 1, packettest.Options{Size: size, SrcPort: 1}))
				r.Drain(1000)
				st, _ := m.Stop(id)
				hdr := int64(len(header(spec, "out", "timestamps on the switch clock (virtual), ingress stamps by link")))
				epb := int64(st.Bytes) - hdr
				spec.MaxBytes = hdr + perFile*epb
				if id, err = m.Start(spec); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < n; i++ {
				r.Send(0, dataplanetest.Frame(t, 0, 1, packettest.Options{Size: size, SrcPort: uint16(1000 + i)}))
			}
			r.Drain(1000)
			st, err := m.Stop(id)
			if err != nil {
				t.Fatal(err)
			}
			if st.Files != n/perFile || st.Written != n || int64(st.Bytes) != n/perFile*spec.MaxBytes {
				t.Fatalf("status %+v; want %d files of %d bytes", st, n/perFile, spec.MaxBytes)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != keep {
				t.Fatalf("%d files in the directory, want the newest %d", len(entries), keep)
			}
			for k := n/perFile - keep; k < n/perFile; k++ {
				name := filepath.Join(dir, rotatedName("rot."+string(f), k))
				if fi, err := os.Stat(name); err != nil || fi.Size() != spec.MaxBytes {
					t.Fatalf("file %d: %v, want %d bytes", k, err, spec.MaxBytes)
				}
				ps := readFile(t, f, name, DefaultSnapLen)
				if len(ps) != perFile {
					t.Fatalf("file %d holds %d packets, want %d", k, len(ps), perFile)
				}
				for j, p := range ps {
					want := uint16(1000 + k*perFile + j)
					if got := packettest.Desc(t, p.data).SrcPort; got != want {
						t.Fatalf("file %d packet %d is frame %d, want %d", k, j, got, want)
					}
				}
			}
			if st.File != filepath.Join(dir, rotatedName("rot."+string(f), n/perFile-1)) {
				t.Fatalf("last file %q", st.File)
			}
		})
	}
}

// header returns the file header a capture of s on port writes, whose
// description names the clocks as the Manager does.
func header(s Spec, port, clocks string) []byte {
	s = s.withDefaults()
	if s.Format == PCAP {
		var b bytes.Buffer
		pcapgo.NewWriterNanos(&b).WriteFileHeader(uint32(s.SnapLen), layers.LinkTypeEthernet)
		return b.Bytes()
	}
	w := newFileWriter(s, nil, "", "", port, wall0, 0)
	w.clocks = clocks
	if err := w.header(); err != nil {
		panic(err)
	}
	return w.rec.Bytes()
}

// TestTimestampsFollowTheSwitchClock starts a capture with the switch's
// clock at 5 ms and checks that a packet dequeued at t lands at
// wall + (t − 5 ms), to the nanosecond, in both formats.
func TestTimestampsFollowTheSwitchClock(t *testing.T) {
	for _, f := range []Format{PCAP, PCAPNG} {
		r := line(t)
		r.Clock.Set(5_000_000)
		m := New(r.Switch, r.Clock, Options{Dir: t.TempDir(), Wall: fixedWall})
		id, err := m.Start(Spec{Port: "out", Format: f, Path: "ts"})
		if err != nil {
			t.Fatal(err)
		}
		fr := dataplanetest.Frame(t, 0, 1, packettest.Options{})
		// The frame reaches the switch 1234567 ns after the capture
		// started (an instant link), and the unshaped port sends it at
		// that instant: its departure time on the port's virtual line.
		r.Clock.Set(5_000_000 + 1_234_567)
		r.Send(0, fr)
		r.Step(1_000, 1_000)
		st, _ := m.Stop(id)
		ps := readFile(t, f, st.File, DefaultSnapLen)
		if len(ps) != 1 || !ps[0].ts.Equal(wall0.Add(1_234_567)) || !bytes.Equal(ps[0].data, fr) {
			t.Fatalf("%s: %d packets, first at %v; want one at wall + 1234567 ns", f, len(ps), ps[0].ts.Sub(wall0))
		}
		if f == PCAPNG && (ps[0].comment != "egress port out queue 0: sent unmarked; sojourn 0.000us" || ps[0].flags != 2) {
			t.Fatalf("ingress comment %q flags %#x", ps[0].comment, ps[0].flags)
		}
	}
}

// TestDSCPFilter captures one DSCP behind VLAN tags and in IPv6.
func TestDSCPFilter(t *testing.T) {
	r := line(t)
	m := New(r.Switch, r.Clock, Options{Dir: t.TempDir(), Wall: fixedWall})
	id, err := m.Start(Spec{Port: "out", DSCP: intp(46), Format: PCAP, Path: "ef.pcap"})
	if err != nil {
		t.Fatal(err)
	}
	o := func(dscp uint8, tags int) packettest.Options {
		p := packettest.Options{SrcMAC: dataplanetest.MAC(0), DstMAC: dataplanetest.MAC(1), DSCP: dscp, ECN: packet.ECT0}
		for i := 0; i < tags; i++ {
			p.Tags = append(p.Tags, packettest.Tag{VLAN: 10})
		}
		return p
	}
	want := [][]byte{packettest.UDP4(t, o(46, 0)), packettest.UDP6(t, o(46, 1)), packettest.TCP4(t, o(46, 2))}
	// The last frame is selected, so that the filtered-out count is published.
	r.Send(0, want[0], packettest.UDP4(t, o(45, 0)), want[1], packettest.UDP6(t, o(47, 1)), packettest.TCP6(t, o(0, 2)), want[2])
	r.Drain(1000)
	st, _ := m.Stop(id)
	ps := readPcap(t, st.File, DefaultSnapLen)
	if len(ps) != len(want) || st.FilteredOut != 3 {
		t.Fatalf("DSCP 46 capture: %d packets, %d filtered out; want %d and 3", len(ps), st.FilteredOut, len(want))
	}
	for i, p := range ps {
		if !bytes.Equal(p.data, want[i]) {
			t.Fatalf("packet %d is not the %d-th DSCP 46 frame", i, i)
		}
	}
}

// TestStartErrors checks that Start names what is wrong.
func TestStartErrors(t *testing.T) {
	r := line(t)
	dir := t.TempDir()
	m := New(r.Switch, r.Clock, Options{Dir: dir})
	if _, err := m.Start(Spec{Port: "out", Path: "x.pcapng"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Port: "nope", Path: "a"}, `port: "nope" is not a port of the switch (in, out)`},
		{Spec{Port: "2", Path: "a"}, "port: 2 outside [0, 1]"},
		{Spec{Port: "out", Path: "../a"}, "outside the capture directory"},
		{Spec{Port: "out", Path: "/etc/a"}, "outside the capture directory"},
		{Spec{Port: "out", Path: "x.pcapng"}, "is written by capture 1"},
		{Spec{Port: "out", Path: "x.7.pcapng"}, `and capture 1's`},
		{Spec{Port: "out", Path: "file/a"}, "file exists"},
	} {
		_, err := m.Start(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start(%+v) = %v; want an error containing %q", c.spec, err, c.want)
		}
	}
	if n := len(m.Status()); n != 1 {
		t.Fatalf("%d captures running after failed starts, want 1", n)
	}
	m.Close()
	if _, err := m.Stop(1); err == nil {
		t.Fatal("Stop of a stopped capture succeeded")
	}
}

// A pcapng section header names the machine and the build: the CPU model
// in shb_hardware, the kernel in shb_os, ecnswitch's version and revision
// in shb_userappl.
func TestSectionInfo(t *testing.T) {
	i := buildinfo.Info{Version: "v1.2.0", Revision: "2f1147e0123456789", Modified: true, GoVersion: "go1.26.0",
		Kernel: "6.18.4", CPU: "AMD EPYC", Arch: "amd64"}
	want := pcapgo.NgSectionInfo{Hardware: "AMD EPYC (amd64)", OS: "Linux 6.18.4", Application: "ecnswitch v1.2.0 (2f1147e01234, modified) built with go1.26.0"}
	if got := sectionInfo(i); got != want {
		t.Errorf("sectionInfo = %+v\nwant %+v", got, want)
	}
}
