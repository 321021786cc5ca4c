package cos_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/clock"

	"github.com/infrastate/backend-operator/internal/circuit"
	"github.com/infrastate/backend-operator/internal/cos"
)

// TestWithWrapTransport checks that the wrapper sees every request signed
// and addressed to the bucket's host, not to the service URL it is
// rewritten to afterwards.
func TestWithWrapTransport(t *testing.T) {
	srv := newServer(t)
	srv.PutState(bucket, "env/terraform.tfstate", []byte(state))
	var (
		mu   sync.Mutex
		seen []string
	)
	wrap := func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			seen = append(seen, circuit.Address(req.URL)+" signed="+strconv.FormatBool(req.Header.Get("Authorization") != ""))
			mu.Unlock()
			return next.RoundTrip(req)
		})
	}
	var d net.Dialer
	c, err := cos.New(baseConfig(), cos.WithServiceURL(srv.ServiceURL()), cos.WithDialContext(d.DialContext), cos.WithWrapTransport(wrap))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"https://" + bucket + ".cos.ap-guangzhou.myqcloud.com:443 signed=true"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("what the wrapper saw (-want +got):\n%s", diff)
	}
}

// TestCircuitPausesARetriedRequest checks that the SDK's retries of a
// request that timed out are paused by the circuit it opened, and that
// the error still reads as no answer from COS.
func TestCircuitPausesARetriedRequest(t *testing.T) {
	breakers := circuit.New(clock.RealClock{})
	wrap := func(next http.RoundTripper) http.RoundTripper { return breakers.Transport("team-a", next) }
	c, err := cos.New(baseConfig(), cos.WithBaseURL(hangingServer(t)),
		cos.WithHTTPClient(&http.Client{Timeout: 100 * time.Millisecond}), cos.WithWrapTransport(wrap))
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckBucket(context.Background())
	if !errors.Is(err, cos.ErrUnreachable) || !errors.Is(err, circuit.ErrOpen) {
		t.Fatalf("CheckBucket() = %v, want ErrUnreachable and circuit.ErrOpen", err)
	}
	start := time.Now()
	err = c.CheckBucket(context.Background())
	if took := time.Since(start); !errors.Is(err, circuit.ErrOpen) || took > 50*time.Millisecond {
		t.Errorf("CheckBucket() again = %v after %s, want circuit.ErrOpen at once", err, took)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
