package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

// File formats, little-endian. pcap: the libpcap format with nanosecond
// timestamps (magic 0xa1b23c4d, version 2.4). pcapng: one Section Header
// Block, one Interface Description Block, then an Enhanced Packet Block per
// packet (draft-ietf-opsawg-pcapng §4.1, §4.2, §4.3).
const (
	linkEthernet = 1 // LINKTYPE_ETHERNET

	ngBlockSHB   = 0x0a0d0d0a
	ngBlockIDB   = 0x00000001
	ngBlockEPB   = 0x00000006
	ngByteOrder  = 0x1a2b3c4d
	ngOptEnd     = 0  // opt_endofopt
	ngOptComment = 1  // opt_comment, UTF-8
	ngSHBHW      = 2  // shb_hardware
	ngSHBOS      = 3  // shb_os
	ngSHBApp     = 4  // shb_userappl
	ngIfName     = 2  // if_name
	ngIfDesc     = 3  // if_description
	ngIfTSResol  = 9  // if_tsresol: 9 = 10^-9 s
	ngIfOS       = 12 // if_os
	ngEPBFlags   = 2  // epb_flags, 32 bits; bits 0–1 are the direction
	ngInbound    = 1
	ngOutbound   = 2
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
type fileWriter struct {
	spec     Spec
	path     string
	portName string
	wall0    int64 // Unix ns at capture start …
	mono0    int64 // … and the switch clock at the same moment

	seq     int      // number of the open file
	kept    []string // files on disk, oldest first
	f       *os.File
	bw      *bufio.Writer
	cw      countWriter
	packets int   // in the open file
	closed  int64 // bytes of the files already closed

	pcap *pcapgo.Writer // the open file's writer, for the pcap format

	text []byte   // comment scratch
	blk  []byte   // EPB options scratch
	hdr  [28]byte // record header scratch; a field, so that it never escapes to the heap
	zero [4]byte  // padding
}

func newFileWriter(s Spec, path, portName string, wall0 time.Time, mono0 int64) *fileWriter {
	return &fileWriter{
		spec: s, path: path, portName: portName, wall0: wall0.UnixNano(), mono0: mono0,
		text: make([]byte, 0, 256), blk: make([]byte, 0, 64),
	}
}

// open creates file number seq and writes its header, deleting the oldest
// file when MaxFiles would be exceeded.
func (w *fileWriter) open(seq int) error {
	name := rotatedName(w.path, seq)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
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
		if err := os.Remove(w.kept[0]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rotate: %w", err)
		}
		w.kept = w.kept[1:]
	}
	if w.spec.Format == PCAP {
		w.pcap = pcapgo.NewWriterNanos(&w.cw)
		err = w.pcap.WriteFileHeader(uint32(w.spec.SnapLen), layers.LinkTypeEthernet)
	} else {
		_, err = w.cw.Write(w.ngHeader())
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// ngHeader returns the Section Header and Interface Description blocks.
func (w *fileWriter) ngHeader() []byte {
	le := binary.LittleEndian
	var body []byte
	body = le.AppendUint32(body, ngByteOrder)
	body = le.AppendUint16(body, 1) // version 1.0
	body = le.AppendUint16(body, 0)
	body = le.AppendUint64(body, ^uint64(0)) // section length not given
	body = appendOpt(body, ngSHBHW, []byte(runtime.GOARCH))
	body = appendOpt(body, ngSHBOS, []byte(runtime.GOOS))
	body = appendOpt(body, ngSHBApp, []byte("ecnswitch"))
	body = appendOpt(body, ngOptEnd, nil)
	b := appendBlock(nil, ngBlockSHB, body)

	body = le.AppendUint16(body[:0], linkEthernet)
	body = le.AppendUint16(body, 0)
	body = le.AppendUint32(body, uint32(w.spec.SnapLen))
	body = appendOpt(body, ngIfName, []byte(w.portName))
	body = appendOpt(body, ngIfDesc, []byte("ecnswitch port "+w.portName+": "+w.describeFilter()))
	body = appendOpt(body, ngIfTSResol, []byte{9})
	body = appendOpt(body, ngIfOS, []byte(runtime.GOOS))
	body = appendOpt(body, ngOptEnd, nil)
	return appendBlock(b, ngBlockIDB, body)
}

// appendOpt appends a pcapng option: code, length, value padded to 32 bits.
func appendOpt(b []byte, code uint16, v []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(v)))
	b = append(b, v...)
	return append(b, make([]byte, pad4(len(v))-len(v))...)
}

// appendBlock appends a pcapng block: type, total length, body, total length.
func appendBlock(b []byte, typ uint32, body []byte) []byte {
	n := uint32(12 + len(body))
	b = binary.LittleEndian.AppendUint32(b, typ)
	b = binary.LittleEndian.AppendUint32(b, n)
	b = append(b, body...)
	return binary.LittleEndian.AppendUint32(b, n)
}

func (w *fileWriter) describeFilter() string {
	s := "direction " + string(w.spec.Direction) + ", filter " + string(w.spec.Filter)
	if w.spec.Queue != nil {
		s += ", queue " + strconv.Itoa(*w.spec.Queue)
	}
	if w.spec.DSCP != nil {
		s += ", dscp " + strconv.Itoa(*w.spec.DSCP)
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
	var size int64
	if w.spec.Format == PCAP {
		size = 16 + int64(len(data))
	} else {
		w.text = w.comment(w.text[:0], r)
		w.blk = epbOptions(w.blk[:0], r.kind, w.text)
		size = 28 + int64(pad4(len(data))) + int64(len(w.blk)) + int64(pad4(len(w.text))) + 8 // + opt_endofopt and the trailing length
	}
	if w.spec.MaxBytes > 0 && w.packets > 0 && w.cw.n+size > w.spec.MaxBytes {
		if err := w.close(); err != nil {
			return err
		}
		if err := w.open(w.seq + 1); err != nil {
			return err
		}
	}
	ts := w.wall0 + (r.time - w.mono0)
	w.packets++
	if w.spec.Format == PCAP {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, ts), CaptureLength: len(data), Length: int(r.length)}
		return w.pcap.WritePacket(ci, data)
	}
	return w.writeEPB(ts, r, data, uint32(size))
}

// writeEPB writes an Enhanced Packet Block (pcapng §4.3) with an epb_flags
// direction for ingress and egress and an opt_comment. gopacket v1.1.19's
// NgWriter.WritePacket could not have written them: it writes no options.
func (w *fileWriter) writeEPB(ts int64, r *record, data []byte, size uint32) error {
	h := w.hdr[:]
	le := binary.LittleEndian
	le.PutUint32(h[0:], ngBlockEPB)
	le.PutUint32(h[4:], size)
	le.PutUint32(h[8:], 0) // interface 0
	le.PutUint32(h[12:], uint32(uint64(ts)>>32))
	le.PutUint32(h[16:], uint32(ts))
	le.PutUint32(h[20:], uint32(len(data)))
	le.PutUint32(h[24:], uint32(r.length))
	w.cw.Write(h)
	w.cw.Write(data)
	w.cw.Write(w.zero[:pad4(len(data))-len(data)])
	w.cw.Write(w.blk)
	w.cw.Write(w.text)
	w.cw.Write(w.zero[:pad4(len(w.text))-len(w.text)])
	// opt_endofopt, then the trailing length.
	le.PutUint32(h[0:], 0)
	le.PutUint32(h[4:], size)
	_, err := w.cw.Write(h[:8])
	return err
}

// epbOptions appends the options before the comment's text: epb_flags for
// a direction, then the opt_comment header of a comment of len(text).
func epbOptions(b []byte, kind dataplane.EventKind, text []byte) []byte {
	le := binary.LittleEndian
	if kind != dataplane.EventDrop {
		dir := uint32(ngInbound)
		if kind == dataplane.EventEgress {
			dir = ngOutbound
		}
		b = le.AppendUint16(b, ngEPBFlags)
		b = le.AppendUint16(b, 4)
		b = le.AppendUint32(b, dir)
	}
	b = le.AppendUint16(b, ngOptComment)
	return le.AppendUint16(b, uint16(len(text)))
}

func pad4(n int) int { return (n + 3) &^ 3 }

// maxComment bounds a comment; option lengths are 16 bits.
const maxComment = 1024

// comment appends what happened to the packet and why, e.g.
//
//	egress port c queue 1: marked CE by mqecn (value 41000, threshold 32000); sojourn 212.000us
//	drop port c queue 0: dropped (dynamic_threshold)
//	ingress port a: received
//
// Value and threshold are what the marker compared, in its own unit
// (bytes or ns). It allocates nothing.
func (w *fileWriter) comment(b []byte, r *record) []byte {
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
		if r.marker != "" {
			b = append(b, ": marked CE by "...)
		} else {
			b = append(b, ": sent unmarked"...)
		}
	default:
		b = append(b, ": dropped ("...)
		b = append(b, r.drop.String()...)
		b = append(b, ')')
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
