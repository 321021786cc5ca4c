package stateserver

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// lockInfo returns a LockInfo JSON document with the given ID, shaped like
// the ones Terraform sends.
func lockInfo(id string) []byte {
	return []byte(`{"ID":"` + id + `","Operation":"OperationTypeApply","Info":"","Who":"user@host","Version":"1.5.7","Created":"2026-01-02T03:04:05.123456789Z","Path":""}`)
}

func md5Header(b []byte) string {
	sum := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// response is what the tests compare of an HTTP answer.
type response struct {
	Status int
	Body   string
}

// startServer serves srv over real TCP for the duration of the test.
func startServer(t *testing.T, srv *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

// send makes one request. header may be nil. A body is sent with
// Content-Type and a correct Content-MD5 unless header sets its own.
func send(t *testing.T, client *http.Client, method, url string, body []byte, header http.Header) (response, http.Header) {
	t.Helper()
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, reader)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-MD5", md5Header(body))
	}
	for k, vs := range header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return do(t, client, req)
}

// do sends req and reads its answer whole.
func do(t *testing.T, client *http.Client, req *http.Request) (response, http.Header) {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer of %s %s: %v", req.Method, req.URL, err)
	}
	return response{Status: resp.StatusCode, Body: string(b)}, resp.Header
}

// stored is a record with its state read into memory, for seeding stores and
// comparing what they hold.
type stored struct {
	State []byte // nil: no state; empty: an empty document
	Lock  []byte
}

// stage stages b in s and closes the Document at the end of the test.
func stage(t *testing.T, s Store, b []byte) Document {
	t.Helper()
	doc, err := s.Stage(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Stage: %v", err)
	}
	t.Cleanup(func() { _ = doc.Close() })
	return doc
}

// put makes want the record of name in s.
func put(t *testing.T, s Store, name string, want stored) {
	t.Helper()
	var doc Document
	if want.State != nil {
		doc = stage(t, s, want.State)
	}
	if err := s.Update(name, func(r *Record) error {
		r.State, r.Lock = doc, want.Lock
		return nil
	}); err != nil {
		t.Fatalf("Update(%q): %v", name, err)
	}
}

// load returns the record of name in s.
func load(t *testing.T, s Store, name string) stored {
	t.Helper()
	rec, err := s.Load(name)
	if err != nil {
		t.Fatalf("Load(%q): %v", name, err)
	}
	got := stored{Lock: rec.Lock}
	if rec.State != nil {
		got.State = readDocument(t, rec.State)
		if err := rec.State.Close(); err != nil {
			t.Errorf("closing the state of %q: %v", name, err)
		}
	}
	return got
}

// readDocument returns the whole content of doc.
func readDocument(t *testing.T, doc Document) []byte {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(doc, 0, doc.Size()))
	if err != nil {
		t.Fatalf("reading a document: %v", err)
	}
	return b
}
