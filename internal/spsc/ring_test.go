package spsc

import "testing"

func TestFIFOAndBounds(t *testing.T) {
	r, err := New[int](4)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if !r.Push(i) {
			t.Fatalf("push %d refused", i)
		}
	}
	if r.Push(4) {
		t.Fatal("push beyond capacity accepted")
	}
	for i := 0; i < 4; i++ {
		if v, ok := r.Pop(); !ok || v != i {
			t.Fatalf("pop = %d, %v; want %d", v, ok, i)
		}
	}
	if _, ok := r.Pop(); ok {
		t.Fatal("pop from empty ring succeeded")
	}
	if _, err := New[int](6); err == nil {
		t.Fatal("size 6 accepted")
	}
}

// TestConcurrent moves a million values between two goroutines; run with
// -race to check the ordering the ring promises.
func TestConcurrent(t *testing.T) {
	r, _ := New[int](64)
	const n = 1 << 20
	done := make(chan error)
	go func() {
		for want := 0; want < n; {
			v, ok := r.Pop()
			if !ok {
				continue
			}
			if v != want {
				t.Errorf("got %d, want %d", v, want)
				break
			}
			want++
		}
		close(done)
	}()
	for i := 0; i < n; {
		if r.Push(i) {
			i++
		}
	}
	<-done
}
