package capture

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Direction says which of a port's events a capture sees.
type Direction string

// Directions.
const (
	Ingress Direction = "ingress" // frames as the port received them, before parsing
	Egress  Direction = "egress"  // frames as the port sent them, after any CE mark
	Drops   Direction = "drops"   // frames the switch dropped on the port, either side, and those it trimmed instead
)

// Filter selects packets within a direction.
type Filter string

// Filters.
const (
	All     Filter = "all"     // every packet of the direction
	Marked  Filter = "marked"  // egress packets the switch set CE on
	Dropped Filter = "dropped" // dropped packets; the same as direction drops with filter all
	// Trimmed selects trimmed packets (dataplane.Trim): on egress the
	// headers the port sent, in drops the trims themselves (as cut) and
	// the headers the trim queue refused.
	Trimmed Filter = "trimmed"
)

// Format is the file format.
type Format string

// Formats.
const (
	PCAP   Format = "pcap"   // libpcap with nanosecond timestamps
	PCAPNG Format = "pcapng" // pcapng with a comment on every packet
)

// Defaults and limits of a Spec.
const (
	// DefaultSnapLen keeps Ethernet, two VLAN tags, an IPv6 header and a TCP
	// header with full options (14+8+40+60 = 122 bytes) with room to spare,
	// while a ring slot stays small; raise it to keep payload.
	DefaultSnapLen = 256
	MinSnapLen     = 64
	MaxSnapLen     = 65535

	// DefaultRing is the ring's size in slots. With the writer polling every
	// millisecond it absorbs bursts of about 4 Mpps of captured packets.
	DefaultRing = 4096
	MinRing     = 16
	MaxRing     = 1 << 20
	// MaxRingBytes bounds the ring's memory, ring × snaplen.
	MaxRingBytes = 256 << 20

	// DefaultMaxBytes and DefaultMaxFiles rotate a capture that sets
	// neither: at most 8 files of 64 MiB, 512 MiB on disk.
	DefaultMaxBytes = 64 << 20
	DefaultMaxFiles = 8
	MinMaxBytes     = 1024
	MaxMaxBytes     = 1 << 40
	MaxMaxFiles     = 100_000
	// Unlimited, as MaxBytes, never rotates; as MaxFiles, keeps every file.
	Unlimited = -1

	// recordSlack bounds what a file may hold beyond MaxBytes: its header
	// and one record (a file always holds at least one packet), snaplen
	// aside.
	recordSlack = 2048
)

// Spec describes one capture. The zero values of the optional fields take
// the defaults; Validate says what is wrong with the rest. Keys are the
// JSON and YAML names.
type Spec struct {
	// Port is the switch port, by name or by index.
	Port string `json:"port" yaml:"port"`
	// Direction is ingress, egress or drops. Empty: drops for filter
	// dropped, else egress.
	Direction Direction `json:"direction,omitempty" yaml:"direction,omitempty"`
	// Filter is all (the default), marked (egress only) or dropped (drops only).
	Filter Filter `json:"filter,omitempty" yaml:"filter,omitempty"`
	// Queue, when set, keeps only packets of that egress queue; ingress
	// events have no queue yet, so it needs direction egress or drops.
	Queue *int `json:"queue,omitempty" yaml:"queue,omitempty"`
	// DSCP, when set, keeps only IP packets with that DSCP (0–63), as the
	// frame carries it at the event.
	DSCP *int `json:"dscp,omitempty" yaml:"dscp,omitempty"`
	// Format is pcap or pcapng (the default, which carries the comments).
	Format Format `json:"format,omitempty" yaml:"format,omitempty"`
	// Path is the first file's name, created at start (replacing what had
	// the name, never following a symlink); rotated files insert .1, .2, …
	// before the extension. When the Manager has a directory, a relative
	// path is taken inside it and the file must stay inside it.
	Path string `json:"path" yaml:"path"`
	// SnapLen is how many bytes of each frame are kept, in
	// [MinSnapLen, MaxSnapLen]; 0 means DefaultSnapLen.
	SnapLen int `json:"snaplen,omitempty" yaml:"snaplen,omitempty"`
	// MaxBytes rotates to a new file before one would grow past it; 0
	// means DefaultMaxBytes, Unlimited (-1) never rotates. A file always
	// holds at least one packet.
	MaxBytes int64 `json:"max_bytes,omitempty" yaml:"max_bytes,omitempty"`
	// MaxFiles keeps only the newest MaxFiles files, deleting older ones;
	// 0 means DefaultMaxFiles when the capture rotates, Unlimited (-1)
	// keeps every file.
	MaxFiles int `json:"max_files,omitempty" yaml:"max_files,omitempty"`
	// Ring is the number of slots between the port's worker and the
	// writer, a power of two; 0 means DefaultRing.
	Ring int `json:"ring,omitempty" yaml:"ring,omitempty"`
}

// WithDefaults returns s with the defaults filled in: direction egress
// (drops for filter dropped), filter all, format pcapng, DefaultSnapLen,
// DefaultRing, and rotation at DefaultMaxBytes keeping DefaultMaxFiles.
// Path stays as it is.
func (s Spec) WithDefaults() Spec { return s.withDefaults() }

// withDefaults returns s with the defaults filled in.
func (s Spec) withDefaults() Spec {
	if s.Filter == "" {
		s.Filter = All
	}
	if s.Direction == "" {
		s.Direction = Egress
		if s.Filter == Dropped {
			s.Direction = Drops
		}
	}
	if s.Format == "" {
		s.Format = PCAPNG
	}
	if s.SnapLen == 0 {
		s.SnapLen = DefaultSnapLen
	}
	if s.Ring == 0 {
		s.Ring = DefaultRing
	}
	if s.MaxBytes == 0 {
		s.MaxBytes = DefaultMaxBytes
	}
	if s.MaxBytes > 0 && s.MaxFiles == 0 {
		s.MaxFiles = DefaultMaxFiles
	}
	return s
}

// DiskBound returns the most bytes the files of s can hold on disk at
// once: MaxFiles files of MaxBytes, each with room for a header and one
// record more. ok is false when s has no bound: it never rotates, or it
// keeps every file.
func (s Spec) DiskBound() (n int64, ok bool) {
	s = s.withDefaults()
	if s.MaxBytes < 0 || s.MaxFiles < 0 {
		return 0, false
	}
	return int64(s.MaxFiles) * (s.MaxBytes + int64(s.SnapLen) + recordSlack), true
}

// RingBytes returns the memory of s's ring, ring × snaplen.
func (s Spec) RingBytes() int64 {
	s = s.withDefaults()
	return int64(s.Ring) * int64(s.SnapLen)
}

// Validate checks s after filling in the defaults. It does not look at the
// switch; the Manager resolves the port.
func (s Spec) Validate() error {
	s = s.withDefaults()
	switch {
	case s.Port == "":
		return fmt.Errorf("port: empty; want a port name or index")
	case s.Direction != Ingress && s.Direction != Egress && s.Direction != Drops:
		return fmt.Errorf("direction: %q; want ingress, egress or drops", s.Direction)
	case s.Filter != All && s.Filter != Marked && s.Filter != Dropped && s.Filter != Trimmed:
		return fmt.Errorf("filter: %q; want all, marked, dropped or trimmed", s.Filter)
	case s.Filter == Marked && s.Direction != Egress:
		return fmt.Errorf("filter: marked with direction %s; marks are seen only on egress", s.Direction)
	case s.Filter == Dropped && s.Direction != Drops:
		return fmt.Errorf("filter: dropped with direction %s; want direction drops", s.Direction)
	case s.Filter == Trimmed && s.Direction == Ingress:
		return fmt.Errorf("filter: trimmed with direction ingress; packets are trimmed at egress admission, after they are received")
	case s.Queue != nil && (*s.Queue < 0 || *s.Queue > 255):
		return fmt.Errorf("queue: %d outside [0, 255]", *s.Queue)
	case s.Queue != nil && s.Direction == Ingress:
		return fmt.Errorf("queue: %d with direction ingress; received packets have no queue yet", *s.Queue)
	case s.DSCP != nil && (*s.DSCP < 0 || *s.DSCP > 63):
		return fmt.Errorf("dscp: %d outside [0, 63]", *s.DSCP)
	case s.Format != PCAP && s.Format != PCAPNG:
		return fmt.Errorf("format: %q; want pcap or pcapng", s.Format)
	case s.Path == "":
		return fmt.Errorf("path: empty; want a file name")
	case s.SnapLen < MinSnapLen || s.SnapLen > MaxSnapLen:
		return fmt.Errorf("snaplen: %d outside [%d, %d]", s.SnapLen, MinSnapLen, MaxSnapLen)
	case s.MaxBytes != Unlimited && (s.MaxBytes < MinMaxBytes || s.MaxBytes > MaxMaxBytes):
		return fmt.Errorf("max_bytes: %d outside [%d, %d] (or -1: never rotate)", s.MaxBytes, MinMaxBytes, int64(MaxMaxBytes))
	case s.MaxBytes == Unlimited && s.MaxFiles != 0:
		return fmt.Errorf("max_files: %d with max_bytes -1 (never rotate); files rotate only by size", s.MaxFiles)
	case s.MaxBytes > 0 && s.MaxFiles != Unlimited && (s.MaxFiles < 1 || s.MaxFiles > MaxMaxFiles):
		return fmt.Errorf("max_files: %d outside [1, %d] (or -1: keep all)", s.MaxFiles, MaxMaxFiles)
	case s.Ring < MinRing || s.Ring > MaxRing || s.Ring&(s.Ring-1) != 0:
		return fmt.Errorf("ring: %d is not a power of two in [%d, %d]", s.Ring, MinRing, MaxRing)
	case int64(s.Ring)*int64(s.SnapLen) > MaxRingBytes:
		return fmt.Errorf("ring: %d slots of snaplen %d is %d bytes, more than %d", s.Ring, s.SnapLen, int64(s.Ring)*int64(s.SnapLen), MaxRingBytes)
	}
	return nil
}

// resolvePort returns the index of the port s names among names.
func resolvePort(port string, names []string) (int, error) {
	for i, n := range names {
		if n == port {
			return i, nil
		}
	}
	if i, err := strconv.Atoi(port); err == nil {
		if i < 0 || i >= len(names) {
			return 0, fmt.Errorf("port: %d outside [0, %d]", i, len(names)-1)
		}
		return i, nil
	}
	return 0, fmt.Errorf("port: %q is not a port of the switch (%s)", port, strings.Join(names, ", "))
}

// localName returns p as a name beneath dir: p itself when relative, p
// made relative to dir when absolute. The name must stay beneath dir
// lexically (filepath.IsLocal); the os.Root the files are created through
// then keeps symlinks from leading out.
func localName(dir, p string) (string, error) {
	rel := p
	if filepath.IsAbs(p) {
		var err error
		if rel, err = filepath.Rel(dir, filepath.Clean(p)); err != nil {
			rel = p
		}
	}
	if !filepath.IsLocal(rel) || filepath.Clean(rel) == "." {
		return "", fmt.Errorf("path: %q is outside the capture directory %q", p, dir)
	}
	return filepath.Clean(rel), nil
}

// rotatedName is the name of file number seq of a capture: path itself for
// 0, else path with .seq inserted before the extension (name.pcap,
// name.1.pcap, name.2.pcap, …).
func rotatedName(path string, seq int) string {
	if seq == 0 {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + strconv.Itoa(seq) + ext
}
