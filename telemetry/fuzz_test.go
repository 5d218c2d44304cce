package telemetry

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// FuzzDecodeQueues feeds /queues' query decoding arbitrary query strings:
// it never panics, an error is a 400 or a 404 with a message, and an
// accepted query selects exactly the ports it names (all when it names
// none), each once, with since and limit as given.
func FuzzDecodeQueues(f *testing.F) {
	for _, s := range []string{
		"", "port=a", "port=a,b&limit=2", "port=a&port=b,b,,a", "since=150000", "since=abc", "limit=-1",
		"port=zz", "port=" + strings.Repeat("b,", 100), "since=-1&limit=0", "port=a%2Cb", "limit=99999999999999999999",
	} {
		f.Add(s)
	}
	r := newRig(f, 16)
	names := map[string]int{"a": 0, "b": 1}
	f.Fuzz(func(t *testing.T, raw string) {
		v, _ := url.ParseQuery(raw) // as net/http does: malformed pairs are dropped
		q, code, err := r.srv.decodeQueues(v)
		if err != nil {
			if (code != http.StatusBadRequest && code != http.StatusNotFound) || err.Error() == "" {
				t.Fatalf("%q: status %d, error %v", raw, code, err)
			}
			return
		}
		want := map[int]bool{}
		for _, p := range v["port"] {
			for n := range strings.SplitSeq(p, ",") {
				if n != "" {
					i, ok := names[n]
					if !ok {
						t.Fatalf("%q: port %q accepted", raw, n)
					}
					want[i] = true
				}
			}
		}
		for i := range 2 {
			if got := q.sel.has(i); got != (len(want) == 0 || want[i]) {
				t.Fatalf("%q: port %d selected %v, want %v", raw, i, got, want[i])
			}
		}
		since, limit := int64(-1), 0
		if s := v.Get("since"); s != "" {
			since, _ = strconv.ParseInt(s, 10, 64)
		}
		if s := v.Get("limit"); s != "" {
			limit, _ = strconv.Atoi(s)
		}
		if q.since != since || q.limit != limit || q.limit < 0 {
			t.Fatalf("%q: since %d limit %d, want %d and %d", raw, q.since, q.limit, since, limit)
		}
	})
}
