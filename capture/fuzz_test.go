package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"testing"
)

// request builds a request of the capture API from raw parts, as a client
// could send them.
func request(method, path, query string, body []byte) *http.Request {
	return &http.Request{
		Method: method, URL: &url.URL{Path: path, RawQuery: query},
		Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)),
	}
}

// FuzzDecodeStart feeds the capture API's request decoding arbitrary
// bodies and stop queries: it never panics, every error is ErrInvalid (so
// the client gets 400, never 500), an accepted spec validates and decodes
// again to itself from its own JSON, and an accepted id is positive.
func FuzzDecodeStart(f *testing.F) {
	for _, s := range []string{
		`{"port": "out", "path": "x.pcapng"}`,
		`{"port": "c", "direction": "egress", "filter": "marked", "queue": 1, "dscp": 46, "format": "pcap", "path": "d/m.pcap", "snaplen": 128, "max_bytes": 1048576, "max_files": 3, "ring": 1024}`,
		`{"port": "out", "path": "y", "snap": 100}`,
		`{"port": "out", "path": "y"} {"port": "in"}`,
		`{"port": "out", "path": "y", "ring": 1e9}`,
		`{"port": `,
		`[]`, `null`, ``,
	} {
		f.Add([]byte(s), "id=1")
	}
	f.Add([]byte(`{}`), "id=-3&id=4")
	f.Add([]byte(`{}`), "id=%zz")
	f.Fuzz(func(t *testing.T, body []byte, query string) {
		s, err := decodeStart(request(http.MethodPost, "/capture/start", "", body))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("start: %v is not ErrInvalid", err)
			}
		} else {
			if verr := s.Validate(); verr != nil {
				t.Fatalf("accepted %q, which does not validate: %v", body, verr)
			}
			again, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			s2, err := decodeStart(request(http.MethodPost, "/capture/start", "", again))
			if err != nil || !reflect.DeepEqual(s, s2) {
				t.Fatalf("%q: decoded %+v, whose JSON %s decodes to %+v, %v", body, s, again, s2, err)
			}
		}
		id, err := decodeStop(request(http.MethodPost, "/capture/stop", query, nil))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("stop: %v is not ErrInvalid", err)
			}
			return
		}
		if id < 1 {
			t.Fatalf("query %q: id %d accepted", query, id)
		}
	})
}
