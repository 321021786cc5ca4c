package main

import (
	"bytes"
	"context"
	"crypto/md5" // the protocol's checksum
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// TestLargeStatesUseBoundedMemory runs the binary with a data directory,
// uploads six 100 MiB states at once, downloads them at once and checks every
// byte, then reads the server's peak resident memory: bodies are streamed
// through files, so the peak stays far below the 600 MiB in flight (it was
// 1.7 to 1.9 GiB when the server held every body in memory, and about 8 MiB
// since).
func TestLargeStatesUseBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 1.2 GB through the server")
	}
	const (
		states    = 6
		stateSize = 100 << 20
		// maxPeak leaves room for the runtime, buffers and page tables, and
		// is a third of a single copy of the data in flight.
		maxPeak = 200 << 20
	)
	srv := startServerProcess(t, []string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir()})
	transport := &http.Transport{MaxConnsPerHost: states, DisableCompression: true}
	t.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}

	sums := make([][]byte, states)
	for i := range states {
		sums[i] = md5Of(t, generated(i, stateSize))
	}
	parallel(t, states, func(i int) error {
		return uploadGenerated(t.Context(), client, srv.url+"/state/big-"+strconv.Itoa(i), i, stateSize, sums[i])
	})
	parallel(t, states, func(i int) error {
		return downloadAndCompare(t.Context(), client, srv.url+"/state/big-"+strconv.Itoa(i), i, stateSize, sums[i])
	})

	peak := testtools.PeakResidentBytes(t, srv.cmd.Process.Pid)
	t.Logf("server peak resident memory (VmHWM): %d MiB", peak>>20)
	if peak > maxPeak {
		t.Errorf("server peak resident memory %d MiB, want at most %d MiB for %d concurrent %d MiB states",
			peak>>20, maxPeak>>20, states, stateSize>>20)
	}
}

// generated returns the deterministic content of state number i.
func generated(i int, size int64) io.Reader {
	var seed [32]byte
	seed[0] = byte(i)
	return io.LimitReader(rand.NewChaCha8(seed), size)
}

func md5Of(t *testing.T, r io.Reader) []byte {
	t.Helper()
	h := md5.New()
	if _, err := io.Copy(h, r); err != nil {
		t.Fatal(err)
	}
	return h.Sum(nil)
}

// parallel runs fn(0) to fn(n-1) at once and fails the test with their
// errors.
func parallel(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func uploadGenerated(ctx context.Context, client *http.Client, url string, i int, size int64, sum []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, generated(i, size))
	if err != nil {
		return err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum))
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, body)
	}
	return nil
}

func downloadAndCompare(ctx context.Context, client *http.Client, url string, i int, size int64, sum []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	if got, want := resp.Header.Get("Content-MD5"), base64.StdEncoding.EncodeToString(sum); got != want {
		return fmt.Errorf("GET %s: Content-MD5 %q, want %q", url, got, want)
	}
	n, err := compareStreams(resp.Body, generated(i, size))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if n != size {
		return fmt.Errorf("GET %s: %d bytes, want %d", url, n, size)
	}
	return nil
}

// compareStreams reads got to its end and checks that it holds exactly the
// bytes of want; it returns how many bytes matched.
func compareStreams(got, want io.Reader) (int64, error) {
	const chunk = 1 << 20
	gotBuf, wantBuf := make([]byte, chunk), make([]byte, chunk)
	var total int64
	for {
		n, err := io.ReadFull(got, gotBuf)
		if n > 0 {
			if _, werr := io.ReadFull(want, wantBuf[:n]); werr != nil {
				return total, fmt.Errorf("more bytes than expected after %d", total)
			}
			if !bytes.Equal(gotBuf[:n], wantBuf[:n]) {
				return total, fmt.Errorf("content differs in the %d bytes after offset %d", n, total)
			}
			total += int64(n)
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			if m, _ := want.Read(wantBuf[:1]); m != 0 {
				return total, fmt.Errorf("only %d bytes", total)
			}
			return total, nil
		case err != nil:
			return total, err
		}
	}
}
