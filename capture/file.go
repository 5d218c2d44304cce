package capture

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
)

// countWriter counts the bytes written through it: the file's size as the
// readers will see it, whatever is still buffered.
type countWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// fileWriter writes one capture's records to its rotating files. It runs
// on the capture's writer goroutine only.
//
// Both formats are encoded by gopacket's pcapgo: pcap by Writer (libpcap
// with nanosecond timestamps), pcapng by NgWriter (one Section Header
// Block, one Interface Description Block, then an Enhanced Packet Block per
// packet with an epb_flags direction and an opt_comment). Each record is
// encoded into rec first, so that its exact size decides rotation before
// any of it reaches the file.
type fileWriter struct {
	spec     Spec
	root     *os.Root // the directory the files are created in
	name     string   // the first file's name beneath root
	path     string   // the first file's path, as Status shows it
	portName string
	clocks   string               // which clocks the timestamps come from, for pcapng's if_description; "" to leave it out
	clock    string               // the switch's clock (timestamp.Name), for INT records' times
	section  pcapgo.NgSectionInfo // pcapng's shb_hardware, shb_os and shb_userappl: the machine and the build
	wall0    int64                // Unix ns at capture start …
	mono0    int64                // … and the switch clock at the same moment

	seq     int      // number of the open file
	kept    []string // names beneath root of the files on disk, oldest first
	f       *os.File
	bw      *bufio.Writer
	cw      countWriter
	packets int   // in the open file
	closed  int64 // bytes of the files already closed

	rec  bytes.Buffer     // the record (or file header) being encoded
	pcap *pcapgo.Writer   // encodes into rec, for the pcap format
	ng   *pcapgo.NgWriter // encodes into rec, for pcapng; one per file

	text     []byte // comment scratch
	comments [1]string
	inbound  pcapgo.NgEpbFlags
	outbound pcapgo.NgEpbFlags
}

// newFileWriter returns the writer of a capture whose first file is name
// beneath root, shown as path.
func newFileWriter(s Spec, root *os.Root, name, path, portName string, wall0 time.Time, mono0 int64) *fileWriter {
	return &fileWriter{
		spec: s, root: root, name: name, path: path, portName: portName, wall0: wall0.UnixNano(), mono0: mono0,
		section:  sectionInfo(buildinfo.Read()),
		text:     make([]byte, 0, 256),
		inbound:  pcapgo.NgEpbFlags{Direction: pcapgo.NgEpbFlagDirectionInbound},
		outbound: pcapgo.NgEpbFlags{Direction: pcapgo.NgEpbFlagDirectionOutbound},
	}
}

// file returns the path of the open (or last) file.
func (w *fileWriter) file() string { return rotatedName(w.path, w.seq) }

// open creates file number seq and writes its header, deleting the oldest
// file when MaxFiles would be exceeded.
func (w *fileWriter) open(seq int) error {
	name := rotatedName(w.name, seq)
	f, err := createFile(w.root, name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("create %s: %w", rotatedName(w.path, seq), err)
	}
	w.f, w.seq, w.packets = f, seq, 0
	if w.bw == nil {
		w.bw = bufio.NewWriterSize(f, 64<<10)
	} else {
		w.bw.Reset(f)
	}
	w.cw = countWriter{w: w.bw}
	w.kept = append(w.kept, name)
	if w.spec.MaxFiles > 0 && len(w.kept) > w.spec.MaxFiles {
		if err := w.root.Remove(w.kept[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate: %w", err)
		}
		w.kept = w.kept[1:]
	}
	if err := w.header(); err == nil {
		_, err = w.cw.Write(w.rec.Bytes())
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", rotatedName(w.path, seq), err)
	}
	return nil
}

// header starts a new file's encoder and leaves the file header in rec:
// pcap's file header, or pcapng's Section Header and Interface Description
// blocks naming the port and what the capture selects.
func (w *fileWriter) header() error {
	w.rec.Reset()
	if w.spec.Format == PCAP {
		w.pcap = pcapgo.NewWriterNanos(&w.rec)
		return w.pcap.WriteFileHeader(uint32(w.spec.SnapLen), layers.LinkTypeEthernet)
	}
	intf := pcapgo.NgInterface{
		Name:                w.portName,
		Description:         "ecnswitch port " + w.portName + ": " + w.describeFilter(),
		OS:                  runtime.GOOS,
		LinkType:            layers.LinkTypeEthernet,
		TimestampResolution: 9,
		SnapLength:          uint32(w.spec.SnapLen),
	}
	ng, err := pcapgo.NewNgWriterInterface(&w.rec, intf, pcapgo.NgWriterOptions{SectionInfo: w.section})
	if err != nil {
		return err
	}
	w.ng = ng
	return ng.Flush()
}

// sectionInfo is what a pcapng file's Section Header Block records of
// the build and the machine that wrote it: shb_hardware the CPU model,
// shb_os the kernel, shb_userappl ecnswitch's version and VCS revision.
func sectionInfo(i buildinfo.Info) pcapgo.NgSectionInfo {
	hw := i.CPU
	if hw == "" {
		hw = "unknown CPU"
	}
	osName := runtime.GOOS
	if i.Kernel != "" {
		osName = "Linux " + i.Kernel
	}
	return pcapgo.NgSectionInfo{
		Hardware:    hw + " (" + i.Arch + ")",
		OS:          osName,
		Application: "ecnswitch " + i.Short() + " built with " + i.GoVersion,
	}
}

func (w *fileWriter) describeFilter() string {
	s := "direction " + string(w.spec.Direction) + ", filter " + string(w.spec.Filter)
	if w.spec.Queue != nil {
		s += ", queue " + strconv.Itoa(*w.spec.Queue)
	}
	if w.spec.DSCP != nil {
		s += ", dscp " + strconv.Itoa(*w.spec.DSCP)
	}
	if w.clocks != "" {
		s += "; " + w.clocks
	}
	return s
}

// close flushes and closes the open file.
func (w *fileWriter) close() error {
	if w.f == nil {
		return nil
	}
	err := w.bw.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.closed += w.cw.n
	w.f = nil
	w.cw = countWriter{}
	return err
}

// flush pushes buffered records to the file.
func (w *fileWriter) flush() error {
	if w.f == nil {
		return nil
	}
	return w.bw.Flush()
}

// bytes returns the bytes written to every file so far.
func (w *fileWriter) bytes() int64 { return w.closed + w.cw.n }

// write appends one record, rotating first when the file would outgrow
// MaxBytes.
func (w *fileWriter) write(r *record, data []byte) error {
	if err := w.encode(r, data); err != nil {
		return err
	}
	if w.spec.MaxBytes > 0 && w.packets > 0 && w.cw.n+int64(w.rec.Len()) > w.spec.MaxBytes {
		if err := w.close(); err != nil {
			return err
		}
		if err := w.open(w.seq + 1); err != nil {
			return err
		}
		// open left the new file's header in rec, and pcapng's blocks
		// belong to the new file's encoder: encode the record again.
		if err := w.encode(r, data); err != nil {
			return err
		}
	}
	w.packets++
	_, err := w.cw.Write(w.rec.Bytes())
	return err
}

// encode leaves r's record in rec: the packet with the switch's timestamp
// and, in pcapng, its direction (inbound for ingress, outbound for egress)
// and the comment saying what happened to it.
func (w *fileWriter) encode(r *record, data []byte) error {
	w.rec.Reset()
	ci := gopacket.CaptureInfo{
		Timestamp:     time.Unix(0, w.wall0+(r.time-w.mono0)),
		CaptureLength: len(data),
		Length:        int(r.length),
	}
	if w.spec.Format == PCAP {
		return w.pcap.WritePacket(ci, data)
	}
	w.text = w.comment(w.text[:0], r, data)
	w.comments[0] = string(w.text)
	opts := pcapgo.NgPacketOptions{Comments: w.comments[:]}
	switch r.kind {
	case dataplane.EventIngress:
		opts.Flags = &w.inbound
	case dataplane.EventEgress:
		opts.Flags = &w.outbound
	}
	if err := w.ng.WritePacketWithOptions(ci, data, opts); err != nil {
		return err
	}
	return w.ng.Flush()
}

// maxComment bounds a comment; option lengths are 16 bits.
const maxComment = 1024

// comment appends what happened to the packet and why, e.g.
//
//	egress port c queue 1: marked CE by mqecn (value 41000, threshold 32000); sojourn 212.000us
//	drop port c queue 0: dropped (dynamic_threshold)
//	trim port c queue 0: trimmed (static_cap) from 1514 to 106 bytes
//	egress port c queue 7: sent trimmed; sojourn 1.250us
//	ingress port a: received
//	egress port c queue 0: sent unmarked; sojourn 3.125us; INT (switch clock monotonic): added, 0 hops left; records, newest first: {queue 0: 4500 B, t 1250000 ns, tx 987654 B, 995 Mbit/s}
//
// Value and threshold are what the marker compared, in its own unit
// (bytes or ns); INT records are decoded from data, the frame as
// captured (appendINT). It allocates nothing but what decoding the INT
// records does.
func (w *fileWriter) comment(b []byte, r *record, data []byte) []byte {
	b = append(b, r.kind.String()...)
	b = append(b, " port "...)
	b = append(b, w.portName...)
	if r.queue >= 0 {
		b = append(b, " queue "...)
		b = strconv.AppendInt(b, int64(r.queue), 10)
	}
	switch r.kind {
	case dataplane.EventIngress:
		b = append(b, ": received"...)
	case dataplane.EventEgress:
		switch {
		case r.marker != "" && r.trimmed:
			b = append(b, ": trimmed, marked CE by "...)
		case r.marker != "":
			b = append(b, ": marked CE by "...)
		case r.trimmed:
			b = append(b, ": sent trimmed"...)
		default:
			b = append(b, ": sent unmarked"...)
		}
	case dataplane.EventTrim:
		b = append(b, ": trimmed ("...)
		b = append(b, r.drop.String()...)
		b = append(b, ") from "...)
		b = strconv.AppendInt(b, int64(r.cutFrom), 10)
		b = append(b, " to "...)
		b = strconv.AppendInt(b, int64(r.length), 10)
		b = append(b, " bytes"...)
	default:
		b = append(b, ": dropped ("...)
		b = append(b, r.drop.String()...)
		b = append(b, ')')
		if r.trimmed {
			b = append(b, " after trimming"...)
		}
		if r.marker != "" {
			b = append(b, " by "...)
		}
	}
	if r.marker != "" {
		b = append(b, r.marker...)
		b = append(b, " (value "...)
		b = strconv.AppendInt(b, r.value, 10)
		b = append(b, ", threshold "...)
		b = strconv.AppendInt(b, r.threshold, 10)
		b = append(b, ')')
	}
	if r.sojourn >= 0 {
		b = append(b, "; sojourn "...)
		b = appendMicros(b, r.sojourn)
	}
	b = appendINT(b, r, data, w.clock)
	if len(b) > maxComment {
		b = b[:maxComment]
	}
	return b
}

// appendMicros appends ns as microseconds with three decimals.
func appendMicros(b []byte, ns int64) []byte {
	b = strconv.AppendInt(b, ns/1000, 10)
	f := ns % 1000
	b = append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
	return append(b, "us"...)
}
