package stateclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5" // protocol checksum
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// The benchmarks run the reference state server (memory store) in a child
// process and talk to it over loopback TCP. Each client benchmark has a
// bare net/http baseline doing the same transfer in the same run, on an
// identical transport (a clone of http.DefaultTransport). Allocations
// (B/op) are therefore the client's alone.

var benchSizes = []struct {
	name string
	size int
}{{"1MiB", 1 << 20}, {"16MiB", 16 << 20}}

var reference struct {
	once sync.Once
	url  string
	err  error
	cmd  *exec.Cmd
	stop io.Closer
}

// benchRequest returns a request bound to the benchmark's context, as
// hc.Get and hc.Post would build it.
func benchRequest(b *testing.B, method, target string, body io.Reader) *http.Request {
	b.Helper()
	req, err := http.NewRequestWithContext(b.Context(), method, target, body)
	if err != nil {
		b.Fatal(err)
	}
	return req
}

// referenceURL starts the child server once per test binary run.
func referenceURL(b *testing.B) string {
	b.Helper()
	reference.once.Do(func() {
		cmd := exec.Command(os.Args[0], "-test.run=^$") //nolint:noctx // serves every benchmark of the binary; stopReference stops it by closing its stdin
		cmd.Env = append(os.Environ(), serverModeEnv+"=1")
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			reference.err = err
			return
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			reference.err = err
			return
		}
		if err := cmd.Start(); err != nil {
			reference.err = err
			return
		}
		reference.cmd, reference.stop = cmd, stdin
		line, err := bufio.NewReader(stdout).ReadString('\n')
		reference.url, reference.err = strings.TrimSpace(line), err
	})
	if reference.err != nil {
		b.Fatalf("starting the reference server: %v", reference.err)
	}
	return reference.url
}

// stopReference stops the child server, if started; TestMain calls it.
func stopReference() {
	if reference.cmd == nil {
		return
	}
	_ = reference.stop.Close()
	done := make(chan struct{})
	go func() { _ = reference.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = reference.cmd.Process.Kill()
	}
}

// benchState returns a plausible version 4 state of exactly size bytes:
// a few outputs and many resource instances, the last one padded.
func benchState(size int) []byte {
	const tail = `]}`
	instance := func(i int, pad string) string {
		return fmt.Sprintf(`{"mode":"managed","type":"aws_instance","name":"web_%d","provider":"provider[\"registry.terraform.io/hashicorp/aws\"]",`+
			`"instances":[{"schema_version":1,"attributes":{"id":"i-%08x","ami":"ami-0abcdef","cpu":2,"ebs_optimized":true,"tags":{"Name":"web-%d","env":"bench"},"pad":"%s"}}]}`, i, i, i, pad)
	}
	var b bytes.Buffer
	b.WriteString(`{"version":4,"terraform_version":"1.9.0","serial":7,"lineage":"bench","outputs":{` +
		`"vpc_id":{"value":"vpc-0123","type":"string"},"subnets":{"value":["a","b","c"],"type":["list","string"]},` +
		`"db":{"value":{"host":"db.internal","port":5432},"type":["object",{"host":"string","port":"number"}],"sensitive":true}},"resources":[`)
	for i := 0; ; i++ {
		next := instance(i, strings.Repeat("x", 100)) + ","
		if b.Len()+len(next)+len(instance(i+1, ""))+len(tail) > size {
			b.WriteString(instance(i, strings.Repeat("y", size-b.Len()-len(instance(i, ""))-len(tail))))
			break
		}
		b.WriteString(next)
	}
	b.WriteString(tail)
	return b.Bytes()
}

func TestBenchState(t *testing.T) {
	t.Parallel()
	for _, s := range benchSizes {
		data := benchState(s.size)
		if len(data) != s.size || !json.Valid(data) {
			t.Fatalf("benchState(%d): %d bytes, valid JSON %v", s.size, len(data), json.Valid(data))
		}
	}
}

func benchClient(b *testing.B, name string) (*Client, string) {
	b.Helper()
	url := referenceURL(b) + "/state/" + name
	return mustNewB(b, Config{Address: url, RetryMax: 2, RetryWaitMin: time.Millisecond, RetryWaitMax: 10 * time.Millisecond}), url
}

func mustNewB(b *testing.B, cfg Config) *Client {
	b.Helper()
	c, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// warmUp runs op untimed a few times so that the server process has grown
// its heap before the first sub-benchmark: otherwise whichever runs first
// pays for it.
func warmUp(b *testing.B, op func() error) {
	b.Helper()
	for range 10 {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
}

// baselineClient is net/http on the same transport the client clones.
func baselineClient() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// BenchmarkStreamState measures what the client adds to reading a state
// as a stream, the only way it reads one: the consumer copies the body to
// io.Discard, as the baseline does with a bare GET.
func BenchmarkStreamState(b *testing.B) {
	ctx := context.Background()
	for _, s := range benchSizes {
		c, url := benchClient(b, "stream-"+s.name)
		if err := c.Update(ctx, benchState(s.size)); err != nil {
			b.Fatal(err)
		}
		discardAll := func(r io.Reader) error { _, err := io.Copy(io.Discard, r); return err }
		warmUp(b, func() error { _, _, err := c.StreamState(ctx, discardAll); return err })
		b.Run(s.name+"/client", func(b *testing.B) {
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				found, size, err := c.StreamState(ctx, discardAll)
				if err != nil || !found || size != int64(s.size) {
					b.Fatalf("StreamState() = %t, %d bytes, %v", found, size, err)
				}
			}
		})
		b.Run(s.name+"/baseline", func(b *testing.B) {
			hc := baselineClient()
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				resp, err := hc.Do(benchRequest(b, http.MethodGet, url, http.NoBody))
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || n != int64(s.size) {
					b.Fatalf("GET = %d bytes, %v", n, err)
				}
			}
		})
	}
}

func BenchmarkUpdate(b *testing.B) {
	ctx := context.Background()
	for _, s := range benchSizes {
		c, url := benchClient(b, "update-"+s.name)
		data := benchState(s.size)
		warmUp(b, func() error { return c.Update(ctx, data) })
		b.Run(s.name+"/client", func(b *testing.B) {
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Update(ctx, data); err != nil {
					b.Fatal(err)
				}
			}
		})
		// What the brief asks for: a plain POST of the bytes.
		b.Run(s.name+"/baseline", func(b *testing.B) {
			hc := baselineClient()
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				req := benchRequest(b, http.MethodPost, url, bytes.NewReader(data))
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("POST: %s", resp.Status)
				}
			}
		})
		// The same POST with the Content-MD5 the protocol requires: the
		// client computes it, and the server then verifies it.
		b.Run(s.name+"/baseline-md5", func(b *testing.B) {
			hc := baselineClient()
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				req := benchRequest(b, http.MethodPost, url, bytes.NewReader(data))
				sum := md5.Sum(data)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("POST: %s", resp.Status)
				}
			}
		})
	}
}

// BenchmarkUpdateFrom measures a write streamed from a file against the
// same write from memory (Update) and a bare POST of the file.
func BenchmarkUpdateFrom(b *testing.B) {
	ctx := context.Background()
	for _, s := range benchSizes {
		c, url := benchClient(b, "updatefrom-"+s.name)
		data := benchState(s.size)
		f, sum := stateFile(b, data)
		warmUp(b, func() error { return c.UpdateFrom(ctx, "", f, int64(s.size), sum) })
		b.Run(s.name+"/client", func(b *testing.B) {
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.UpdateFrom(ctx, "", f, int64(s.size), sum); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/client-update", func(b *testing.B) {
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Update(ctx, data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/baseline-file-md5", func(b *testing.B) {
			hc := baselineClient()
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					b.Fatal(err)
				}
				req := benchRequest(b, http.MethodPost, url, io.NopCloser(f))
				req.ContentLength = int64(s.size)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("POST: %s", resp.Status)
				}
			}
		})
	}
}

// BenchmarkFetchSummary compares the streaming summary with the naive way:
// read the whole body, then decode it.
func BenchmarkFetchSummary(b *testing.B) {
	ctx := context.Background()
	for _, s := range benchSizes {
		c, url := benchClient(b, "summary-"+s.name)
		if err := c.Update(ctx, benchState(s.size)); err != nil {
			b.Fatal(err)
		}
		warmUp(b, func() error { _, err := c.FetchSummary(ctx, nil); return err })
		b.Run(s.name+"/client", func(b *testing.B) {
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				sum, err := c.FetchSummary(ctx, nil)
				if err != nil || sum.Serial != 7 || sum.OutputCount != 3 {
					b.Fatalf("FetchSummary() = %+v, %v", sum, err)
				}
			}
		})
		b.Run(s.name+"/baseline-readall-unmarshal", func(b *testing.B) {
			hc := baselineClient()
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				resp, err := hc.Do(benchRequest(b, http.MethodGet, url, http.NoBody))
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
				var st struct {
					Serial  uint64 `json:"serial"`
					Outputs map[string]struct {
						Type      json.RawMessage `json:"type"`
						Sensitive bool            `json:"sensitive"`
					} `json:"outputs"`
				}
				if err := json.Unmarshal(body, &st); err != nil || st.Serial != 7 {
					b.Fatal(err)
				}
			}
		})
	}
}
