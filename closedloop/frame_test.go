package closedloop

import (
	"encoding/binary"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
)

// A data frame is a valid IPv4/UDP packet the switch parses: DSCP 8·queue
// (the classifier's default DSCP>>3 gives the queue), ECT(0), correct IPv4
// checksum; a CE mark set by the switch reaches the receiver's echo.
func TestFrameParsesAndCarriesCE(t *testing.T) {
	for q := 0; q < maxQueues; q++ {
		tm := newTemplate(7, q, q)
		buf := make([]byte, 2048)
		n := tm.put(buf, 7, 12345, 987654321)
		d := &packet.Desc{Buf: buf, Len: n}
		if err := packet.Parse(d); err != nil {
			t.Fatalf("queue %d: Parse: %v", q, err)
		}
		if d.L3 != packet.L3IPv4 || d.Proto != packet.ProtoUDP || int(d.DSCP>>3) != q || d.ECN != packet.ECT0 {
			t.Fatalf("queue %d: parsed L3 %v proto %d DSCP %d ECN %v, want IPv4 UDP DSCP %d ECT(0)", q, d.L3, d.Proto, d.DSCP, d.ECN, q<<3)
		}
		if d.SrcPort != srcPortLo+7 || d.DstPort != dstPort {
			t.Fatalf("queue %d: ports %d→%d", q, d.SrcPort, d.DstPort)
		}
		ip := buf[ethLen : ethLen+ipLen]
		if packet.IPv4Checksum(ip) != 0 { // a header with its checksum sums to 0xffff
			t.Fatalf("queue %d: IPv4 header checksum does not verify", q)
		}
		info, ok := readData(buf[:n])
		if !ok || info.flow != 7 || info.seq != 12345 || info.sent != 987654321 || info.ce {
			t.Fatalf("queue %d: readData = %+v, %v", q, info, ok)
		}
		if !packet.SetCE(d) {
			t.Fatalf("queue %d: SetCE refused an ECT(0) packet", q)
		}
		if info, _ := readData(buf[:n]); !info.ce {
			t.Fatalf("queue %d: CE set by the switch not seen by the receiver", q)
		}
		if packet.IPv4Checksum(ip) != 0 {
			t.Fatalf("queue %d: checksum broken after SetCE", q)
		}
	}
}

func TestReadDataRejectsOtherFrames(t *testing.T) {
	tm := newTemplate(1, 0, 0)
	buf := make([]byte, 2048)
	n := tm.put(buf, 1, 1, 1)
	if _, ok := readData(buf[:payloadOff]); ok {
		t.Error("accepted a truncated frame")
	}
	binary.BigEndian.PutUint32(buf[payloadOff:], 0)
	if _, ok := readData(buf[:n]); ok {
		t.Error("accepted a frame without the magic")
	}
	n = tm.put(buf, 1, 1, 1)
	buf[ethLen+9] = packet.ProtoTCP
	if _, ok := readData(buf[:n]); ok {
		t.Error("accepted a TCP frame")
	}
}
