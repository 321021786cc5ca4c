package controllers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/circuit"
	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// TestDefaultClientsShareTheNamespacesCircuits checks that the default
// state and COS clients of one namespace share its circuits: once a
// server left a request of the namespace unanswered, a new client of
// another backend of that namespace is paused at once, and a client of
// another namespace is not.
func TestDefaultClientsShareTheNamespacesCircuits(t *testing.T) {
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() { // accepts and never answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	hung := "http://" + ln.Addr().String()

	o := newOptions([]Option{WithCosServiceURL(mustParseURL(t, hung))})
	fetch := func(namespace, path string) string {
		cfg := stateclient.DefaultConfig(hung + path)
		cfg.RetryMax, cfg.RetryWaitMin, cfg.AttemptTimeout = 2, 10*time.Millisecond, 200*time.Millisecond
		sc, err := o.stateClientsIn(namespace)(cfg, logr.Discard())
		if err != nil {
			t.Fatal(err)
		}
		defer sc.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = sc.FetchSummary(ctx, nil)
		re, ok := errors.AsType[*stateclient.RetryError](err)
		if !ok {
			return fmt.Sprintf("%v", err)
		}
		return fmt.Sprintf("%d attempt(s), paused: %v", re.Attempts, errors.Is(err, circuit.ErrOpen))
	}
	checkBucket := func(namespace string) string {
		cc, err := o.cosClientsIn(namespace)(cos.Config{Bucket: "b-1250000000", Region: "ap-guangzhou", SecretID: "id", SecretKey: "key"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err = cc.CheckBucket(ctx)
		return fmt.Sprintf("unreachable: %v, paused: %v", errors.Is(err, cos.ErrUnreachable), errors.Is(err, circuit.ErrOpen))
	}

	// In order: each request may find the circuits the ones before it
	// opened.
	got := []string{
		fetch("team-a", "/state/one"),
		fetch("team-a", "/state/two"),
		fetch("team-b", "/state/one"),
		checkBucket("team-a"),
		checkBucket("team-a"),
	}
	want := []string{
		// The first attempt had no answer and opened the circuit, which
		// paused the first retry.
		"2 attempt(s), paused: true",
		// Another backend of the namespace, same server: paused at once.
		"1 attempt(s), paused: true",
		// Another namespace: a circuit of its own.
		"2 attempt(s), paused: true",
		// The bucket's host is another address, whatever server answers
		// for it: its first request had no answer within the caller's
		// deadline, which ended its retries too, and opened its circuit,
		// which pauses the next check.
		"unreachable: true, paused: false",
		"unreachable: true, paused: true",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if got := o.circuits.Open(); got != 3 {
		t.Errorf("%d circuits open, want 3: team-a's server and bucket, team-b's server", got)
	}
}

func mustParseURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
