package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// httpBackendController is the name of the manager's HttpBackend
// controller in its metrics and logs.
const httpBackendController = "httpbackend"

// managerPorts are the loopback ports of the manager's endpoints. They
// stay the same across restarts.
type managerPorts struct {
	health, metrics, pprof int
}

// freePorts returns n ports of 127.0.0.1 that were free a moment ago.
func freePorts(ctx context.Context, n int) ([]int, error) {
	var (
		ports     []int
		listeners []net.Listener
	)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		var lc net.ListenConfig
		l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// managerArgs are the manager's flags: the harness's kubeconfig, every
// endpoint on loopback (metrics in plain HTTP, for the harness to
// scrape), probes allowed to loopback addresses only, and the harness's
// probe interval and concurrency.
func managerArgs(kubeconfig string, ports managerPorts, o options) []string {
	loopback := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	return []string{
		"--kubeconfig", kubeconfig,
		"--health-probe-bind-address", loopback(ports.health),
		"--metrics-bind-address", loopback(ports.metrics),
		"--metrics-secure=false",
		"--pprof-bind-address", loopback(ports.pprof),
		"--allowed-address-cidrs=127.0.0.0/8,::1/128",
		"--default-probe-interval=" + o.probeInterval.String(),
		"--max-concurrent-reconciles=" + strconv.Itoa(o.concurrency),
	}
}

// managerProcess is a running cmd/manager.
type managerProcess struct {
	*process
	logPath string
	ports   managerPorts
	http    *http.Client
}

// startManager starts the manager binary with managerArgs, its output
// going to logPath. It does not wait for anything.
func startManager(bin, logPath string, args []string, ports managerPorts) (*managerProcess, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the manager's log: %w", err)
	}
	p, err := startProcess("manager", bin, args, nil, logFile)
	if err != nil {
		_ = logFile.Close()
		return nil, err
	}
	go func() {
		<-p.exited
		_ = logFile.Close()
	}()
	return &managerProcess{process: p, logPath: logPath, ports: ports, http: &http.Client{Timeout: 10 * time.Minute}}, nil
}

// startingWorkers is how controller-runtime logs that the HttpBackend
// controller's caches synced and its workers started.
var startingWorkers = [][]byte{[]byte(`"Starting workers"`), []byte(`"controller":"` + httpBackendController + `"`)}

// workersLine is the manager's log line saying that the HttpBackend
// controller's workers started (see startingWorkers), if logText has it.
func workersLine(logText []byte) ([]byte, bool) {
	for line := range bytes.SplitSeq(logText, []byte("\n")) {
		if bytes.Contains(line, startingWorkers[0]) && bytes.Contains(line, startingWorkers[1]) {
			return line, true
		}
	}
	return nil, false
}

// waitWorkers waits until the manager logs that the HttpBackend
// controller's workers started.
func (m *managerProcess) waitWorkers(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(m.logPath)
		if err != nil {
			return fmt.Errorf("reading the manager's log: %w", err)
		}
		if _, ok := workersLine(b); ok {
			return nil
		}
		if !m.running() {
			return fmt.Errorf("the manager exited before starting its workers, see %s: %w", m.logPath, exitError(m.err))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager did not start its workers within %s: see %s", timeout, m.logPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// get reads path from one of the manager's loopback endpoints.
func (m *managerProcess) get(ctx context.Context, port int, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+path, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the manager's %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the manager's %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the manager's %s: %s", path, resp.Status)
	}
	return body, nil
}

// liveHeap reads the manager's live Go heap: it has the manager collect
// its garbage (the heap profile's gc=1), then reads the heap allocated and
// not yet freed (go_memstats_alloc_bytes) from its metrics. It is what RSS
// holds besides the collector's headroom and memory freed but not yet
// returned to the system.
func (m *managerProcess) liveHeap(ctx context.Context) (int64, error) {
	if _, err := m.get(ctx, m.ports.pprof, "/debug/pprof/heap?gc=1"); err != nil {
		return 0, err
	}
	families, err := m.metrics(ctx, heapMetric)
	if err != nil {
		return 0, err
	}
	if families[heapMetric] == nil {
		return 0, fmt.Errorf("the manager's metrics have no %s", heapMetric)
	}
	return int64(sumWhere(families, heapMetric, nil)), nil
}

// metrics reads the families named from the manager's metrics (see
// parseFamilies).
func (m *managerProcess) metrics(ctx context.Context, names ...string) (map[string]*dto.MetricFamily, error) {
	body, err := m.get(ctx, m.ports.metrics, "/metrics")
	if err != nil {
		return nil, err
	}
	return parseFamilies(bytes.NewReader(body), names...)
}

// heapMetric is the Go heap allocated and not yet freed, in bytes.
const heapMetric = "go_memstats_alloc_bytes"

// progress reads the HttpBackend controller's reconcile count and queue
// depth from the manager's metrics.
func (m *managerProcess) progress(ctx context.Context) (reconcileProgress, error) {
	families, err := m.metrics(ctx, reconcileMetric, queueDepthMetric)
	if err != nil {
		return reconcileProgress{}, err
	}
	if families[reconcileMetric] == nil && families[queueDepthMetric] == nil {
		return reconcileProgress{}, fmt.Errorf("the manager's metrics have no %s", reconcileMetric)
	}
	return reconcileProgressFrom(families, httpBackendController), nil
}

// waitResync waits until the manager has reconciled each of its
// backends (there are backends of them) since it started: its reconcile
// count has reached that number and its queue was empty in two reads in a row (250ms apart),
// or the count has stopped growing for 2 seconds. It returns the time of
// the first of those two reads, or of the last growth.
func (m *managerProcess) waitResync(ctx context.Context, backends int, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	nextLog := time.Now().Add(10 * time.Second)
	var (
		last       reconcileProgress
		lastErr    error
		emptySince time.Time // first of the reads in a row that saw an empty queue
		lastGrowth time.Time // last read that saw the count grow
	)
	for {
		now := time.Now()
		p, err := m.progress(ctx)
		lastErr = err
		switch {
		case err != nil:
			emptySince = time.Time{}
		case int(p.reconciles) < backends:
			emptySince, lastGrowth = time.Time{}, now
		default:
			if p.reconciles != last.reconciles {
				lastGrowth = now
			}
			switch {
			case p.depth != 0:
				emptySince = time.Time{}
			case emptySince.IsZero():
				emptySince = now
			default:
				return emptySince, nil
			}
			if now.Sub(lastGrowth) >= 2*time.Second {
				return lastGrowth, nil
			}
		}
		if err == nil {
			last = p
		}
		if !m.running() {
			return time.Time{}, fmt.Errorf("the manager exited during its resync, see %s: %w", m.logPath, exitError(m.err))
		}
		if now.After(deadline) {
			err := fmt.Errorf("the manager's resync of %d backends did not end within %s (reconciles %d, queue %d)",
				backends, timeout, last.reconciles, last.depth)
			return time.Time{}, errors.Join(err, lastErr)
		}
		if now.After(nextLog) {
			log.Printf("resync: %d reconciles for %d backends, queue %d", last.reconciles, backends, last.depth)
			nextLog = now.Add(10 * time.Second)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// usage reads the manager's memory now and the CPU time it used since it
// had used cpuBefore.
func (m *managerProcess) usage(cpuBefore time.Duration) (*managerUsage, error) {
	mem, err := readMemory(m.pid())
	if err != nil {
		return nil, err
	}
	cpu, err := readCPU(m.pid())
	if err != nil {
		return nil, err
	}
	return &managerUsage{peak: mem.peak, rss: mem.rss, cpu: cpu - cpuBefore}, nil
}

// saveProfile saves the manager's pprof endpoint path (for example
// /debug/pprof/heap) to file.
func (m *managerProcess) saveProfile(ctx context.Context, path, file string) error {
	body, err := m.get(ctx, m.ports.pprof, path)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, body, 0o600); err != nil {
		return fmt.Errorf("saving the profile: %w", err)
	}
	return nil
}
