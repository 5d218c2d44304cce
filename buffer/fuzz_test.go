package buffer

import "testing"

// FuzzAdmitRelease decodes the input as a sequence of operations on the
// mixed two-pool configuration and checks the MMU against the reference
// model after each one: same admission decisions (002 §II-A, §IV-B Eq. 1),
// same counters, and a pool that never exceeds B.
func FuzzAdmitRelease(f *testing.F) {
	f.Add([]byte{0, 0, 0, 200, 1, 0, 0, 0})
	f.Add([]byte{0x10, 0xff, 0xff, 0x20, 0xff, 0xff, 0x30, 0x01, 0x00, 0x81, 0, 0, 0x01, 0x80, 0x40})
	f.Add([]byte("admit and release, admit and release, until the pools are full"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		cfg := mixedConfig()
		m := mustNew(t, cfg)
		md := newModel(cfg)
		held := make([][]fifo, len(cfg.Ports))
		for i, p := range cfg.Ports {
			held[i] = make([]fifo, len(p.Queues))
		}
		// Each operation is 3 bytes: target and kind, then a 16-bit size.
		for ; len(ops) >= 3; ops = ops[3:] {
			port := int(ops[0]&0x7f) % len(cfg.Ports)
			queue := int(ops[0]>>4&7) % len(cfg.Ports[port].Queues)
			f := &held[port][queue]
			if ops[0]&0x80 != 0 && len(f.sizes) > 0 {
				n := f.pop()
				md.release(port, queue, n)
				m.Release(port, queue, n)
			} else {
				n := 1 + (int(ops[1])<<8 | int(ops[2]))
				want := md.admit(port, queue, n)
				if got := m.Admit(port, queue, n); got != want {
					t.Fatalf("Admit(%d, %d, %d) = %v, model %v", port, queue, n, got, want)
				}
				if want == Admitted {
					f.push(n)
				}
			}
			md.check(t, m)
		}
	})
}
