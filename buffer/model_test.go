package buffer

import (
	"math"
	"testing"
)

// model is a deliberately naive reference MMU for differential tests: it
// keeps only each queue's byte and packet counts and recomputes every port
// and pool figure from scratch, by summation, on each use.
type model struct {
	cfg     Config
	bytes   [][]int64 // [port][queue]
	packets [][]int64
	qpeak   [][]int64
	ppeak   []int64
	drops   [][][NumReasons][2]int64 // [port][queue][reason]{packets, bytes}
}

func newModel(cfg Config) *model {
	md := &model{cfg: cfg, ppeak: make([]int64, len(cfg.Ports))}
	for _, p := range cfg.Ports {
		md.bytes = append(md.bytes, make([]int64, len(p.Queues)))
		md.packets = append(md.packets, make([]int64, len(p.Queues)))
		md.qpeak = append(md.qpeak, make([]int64, len(p.Queues)))
		md.drops = append(md.drops, make([][NumReasons][2]int64, len(p.Queues)))
	}
	return md
}

func (md *model) shared(port, queue int) int64 {
	s := md.bytes[port][queue] - md.cfg.Ports[port].Queues[queue].Reserve
	if s < 0 {
		return 0
	}
	return s
}

func (md *model) poolShared(pool int) int64 {
	var s int64
	for i, p := range md.cfg.Ports {
		if p.Pool == pool {
			for j := range p.Queues {
				s += md.shared(i, j)
			}
		}
	}
	return s
}

func (md *model) portBytes(port int) (b, k int64) {
	for j := range md.bytes[port] {
		b += md.bytes[port][j]
		k += md.packets[port][j]
	}
	return b, k
}

func (md *model) poolBytes(pool int) (b, k int64) {
	for i, p := range md.cfg.Ports {
		if p.Pool == pool {
			pb, pk := md.portBytes(i)
			b += pb
			k += pk
		}
	}
	return b, k
}

// admit restates 002 §II-A and §IV-B Eq. 1 directly.
func (md *model) admit(port, queue, size int) Reason {
	qc := md.cfg.Ports[port].Queues[queue]
	pool := md.cfg.Ports[port].Pool
	B := md.cfg.Pools[pool].Size
	oldShared := md.shared(port, queue)
	newShared := max(md.bytes[port][queue]+int64(size)-qc.Reserve, 0)
	r := Admitted
	if newShared > oldShared { // step 2: the shared pool
		free := B - md.poolShared(pool)
		switch {
		case qc.Cap > 0 && newShared > qc.Cap:
			r = StaticCap
		case newShared-oldShared > free:
			r = PoolFull
		case qc.Cap == 0 && float64(oldShared) >= qc.Alpha*float64(free): // Q_i ≥ T(t)
			r = DynamicThreshold
		}
	}
	if r != Admitted {
		md.drops[port][queue][r][0]++
		md.drops[port][queue][r][1] += int64(size)
		return r
	}
	md.bytes[port][queue] += int64(size)
	md.packets[port][queue]++
	md.qpeak[port][queue] = max(md.qpeak[port][queue], md.bytes[port][queue])
	pb, _ := md.portBytes(port)
	md.ppeak[port] = max(md.ppeak[port], pb)
	return r
}

func (md *model) release(port, queue, size int) {
	md.bytes[port][queue] -= int64(size)
	md.packets[port][queue]--
}

func (md *model) threshold(port, queue int) int64 {
	qc := md.cfg.Ports[port].Queues[queue]
	if qc.Cap > 0 {
		return qc.Cap
	}
	pool := md.cfg.Ports[port].Pool
	return int64(math.Ceil(qc.Alpha * float64(md.cfg.Pools[pool].Size-md.poolShared(pool))))
}

// check compares every reader of m with the model.
func (md *model) check(tb testing.TB, m *MMU) {
	tb.Helper()
	for i, p := range md.cfg.Ports {
		for j := range p.Queues {
			if got, want := m.QueueBytes(i, j), md.bytes[i][j]; got != want {
				tb.Fatalf("QueueBytes(%d, %d) = %d, model %d", i, j, got, want)
			}
			if got, want := m.QueuePackets(i, j), md.packets[i][j]; got != want {
				tb.Fatalf("QueuePackets(%d, %d) = %d, model %d", i, j, got, want)
			}
			if got, want := m.QueueSharedBytes(i, j), md.shared(i, j); got != want {
				tb.Fatalf("QueueSharedBytes(%d, %d) = %d, model %d", i, j, got, want)
			}
			if got, want := m.QueuePeak(i, j), md.qpeak[i][j]; got != want {
				tb.Fatalf("QueuePeak(%d, %d) = %d, model %d", i, j, got, want)
			}
			if got, want := m.Threshold(i, j), md.threshold(i, j); got != want {
				tb.Fatalf("Threshold(%d, %d) = %d, model %d", i, j, got, want)
			}
			for r := Reason(0); r < NumReasons; r++ {
				k, b := m.Drops(i, j, r)
				if want := md.drops[i][j][r]; k != want[0] || b != want[1] {
					tb.Fatalf("Drops(%d, %d, %v) = %d packets %d bytes, model %v", i, j, r, k, b, want)
				}
			}
		}
		b, k := md.portBytes(i)
		if m.PortBytes(i) != b || m.PortPackets(i) != k {
			tb.Fatalf("port %d holds %d bytes %d packets, model %d %d", i, m.PortBytes(i), m.PortPackets(i), b, k)
		}
		if got, want := m.PortPeak(i), md.ppeak[i]; got != want {
			tb.Fatalf("PortPeak(%d) = %d, model %d", i, got, want)
		}
		if m.PortPool(i) != p.Pool {
			tb.Fatalf("PortPool(%d) = %d, config %d", i, m.PortPool(i), p.Pool)
		}
	}
	for i, pc := range md.cfg.Pools {
		b, k := md.poolBytes(i)
		if m.PoolBytes(i) != b || m.PoolPackets(i) != k {
			tb.Fatalf("pool %d holds %d bytes %d packets, model %d %d", i, m.PoolBytes(i), m.PoolPackets(i), b, k)
		}
		if got, want := m.PoolSharedBytes(i), md.poolShared(i); got != want {
			tb.Fatalf("PoolSharedBytes(%d) = %d, model %d", i, got, want)
		}
		if got := m.PoolSharedBytes(i); got > pc.Size {
			tb.Fatalf("PoolSharedBytes(%d) = %d exceeds B = %d", i, got, pc.Size)
		}
		if m.PoolSize(i) != pc.Size {
			tb.Fatalf("PoolSize(%d) = %d, config %d", i, m.PoolSize(i), pc.Size)
		}
	}
}

// fifo is the sizes of the packets a queue holds, in arrival order, so that
// tests release exactly what they admitted.
type fifo struct{ sizes []int }

func (f *fifo) push(n int) { f.sizes = append(f.sizes, n) }

func (f *fifo) pop() int {
	n := f.sizes[0]
	f.sizes = f.sizes[1:]
	return n
}

// mixedConfig has two pools; ports mix DT queues of several α, capped
// queues and reserves, so that random traffic reaches every drop reason.
func mixedConfig() Config {
	return Config{
		Pools: []PoolConfig{{Size: 60_000}, {Size: 25_000}},
		Ports: []PortConfig{
			{Pool: 0, Queues: []QueueConfig{{Alpha: 1}, {Alpha: 0.5, Reserve: 4000}, {Cap: 9000}}},
			{Pool: 0, Queues: []QueueConfig{{Alpha: 2, Reserve: 1500}, {Alpha: 1.0 / 8}}},
			{Pool: 1, Queues: []QueueConfig{{Cap: 20_000, Reserve: 3000}, {Alpha: 4}, {Alpha: 1}}},
			{Pool: 1, Queues: []QueueConfig{{Alpha: 8, Reserve: 10_000}}},
		},
	}
}
