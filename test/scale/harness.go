package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/infrastate/backend-operator/internal/testenv"
)

// harness holds what the scenarios share: the control plane, the clients,
// the state server, the manager when it runs, and what earlier scenarios
// left behind.
type harness struct {
	opts options
	// dir holds the binaries, the kubeconfig, the states and the logs.
	dir string
	// logDir holds the processes' logs.
	logDir string
	// keepLogs has close keep logDir when it is inside the work
	// directory (no -log-dir), as after a failed run.
	keepLogs bool

	env *envtest.Environment
	// admin is the control plane's admin config, unthrottled and not
	// counted; the floor and the metrics scrapes use it.
	admin *rest.Config
	// counter counts the harness's own API requests, made through client
	// and the tracker.
	counter *requestCounter
	client  client.Client
	// raw reads the API server's /metrics.
	raw     rest.Interface
	tracker *readyTracker
	// stopTracker stops the tracker's informer, before the control plane.
	stopTracker context.CancelFunc

	kubeconfig string
	// shardKubeconfigs are the kubeconfigs of the shards' managers, each
	// of its own user (see shardUser), by shard.
	shardKubeconfigs map[string]string
	// audit is the API server's audit log of the shards' writes.
	audit                auditLog
	managerBin, stateBin string
	ports                managerPorts
	state                *stateServer
	// manager is the running manager; nil when it is stopped.
	manager *managerProcess
	// starts counts the manager's starts, to name its logs.
	starts int
	// shards are the shards scenario's managers while they run.
	shards []*shardManager

	// primary are the backends the manager keeps Ready across scenarios
	// (burst's, or made by ensureBackends).
	primary []types.NamespacedName
	// floorBurst and floorCold are the floor's times, for the ratios.
	floorBurst, floorCold time.Duration
	// results are the table's rows so far.
	results []result
	// failed is set when a scenario's check failed.
	failed bool
	// profiles lists the profiles written, for the hints at the end.
	profiles []string
}

// newHarness builds the binaries, starts the control plane, the Ready
// tracker and the state server. Call close when done.
func newHarness(ctx context.Context, o options) (*harness, error) {
	dir, err := os.MkdirTemp("", "backend-operator-scale-")
	if err != nil {
		return nil, fmt.Errorf("creating a work directory: %w", err)
	}
	h := &harness{opts: o, dir: dir, logDir: o.logDir, counter: newRequestCounter()}
	if h.logDir == "" {
		h.logDir = filepath.Join(dir, "logs")
	}
	if err := os.MkdirAll(h.logDir, 0o750); err != nil {
		return h, fmt.Errorf("creating the log directory: %w", err)
	}

	log.Printf("building the manager and the state server")
	if err := h.build(ctx); err != nil {
		return h, err
	}
	ports, err := freePorts(ctx, 3)
	if err != nil {
		return h, err
	}
	h.ports = managerPorts{health: ports[0], metrics: ports[1], pprof: ports[2]}

	log.Printf("starting kube-apiserver and etcd")
	if h.env, err = testenv.New(); err != nil {
		return h, err
	}
	if err := h.configureAudit(); err != nil {
		return h, err
	}
	quietAPIServer(h.env)
	cfg, err := h.env.Start()
	if err != nil {
		h.env = nil
		return h, fmt.Errorf("starting the control plane: %w", err)
	}
	h.admin = unthrottled(cfg)
	if err := h.writeKubeconfig(); err != nil {
		return h, err
	}
	if h.client, err = client.New(h.counter.wrap(cfg), client.Options{Scheme: testenv.Scheme()}); err != nil {
		return h, fmt.Errorf("creating the harness's client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(h.admin)
	if err != nil {
		return h, fmt.Errorf("creating a clientset: %w", err)
	}
	h.raw = cs.CoreV1().RESTClient()
	trackerCtx, stopTracker := context.WithCancel(ctx)
	h.stopTracker = stopTracker
	if h.tracker, err = startReadyTracker(trackerCtx, h.counter.wrap(cfg)); err != nil {
		return h, err
	}

	log.Printf("starting the state server")
	if h.state, err = startStateServer(h.stateBin, stateDataDir(dir), filepath.Join(h.logDir, "stateserver.log")); err != nil {
		return h, err
	}
	return h, nil
}

// build builds cmd/manager and cmd/stateserver into the work directory.
func (h *harness) build(ctx context.Context) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("finding the go command: %w", err)
	}
	bin := filepath.Join(h.dir, "bin")
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin+string(filepath.Separator), "./cmd/manager", "./cmd/stateserver")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	h.managerBin, h.stateBin = filepath.Join(bin, "manager"), filepath.Join(bin, "stateserver")
	return nil
}

// writeKubeconfig writes a kubeconfig of a system:masters user for the
// manager, and one for the manager of each shard.
func (h *harness) writeKubeconfig() error {
	var err error
	if h.kubeconfig, err = h.writeUserKubeconfig("scale-manager", "kubeconfig"); err != nil {
		return err
	}
	h.shardKubeconfigs = map[string]string{}
	for _, s := range shardNames {
		if h.shardKubeconfigs[s], err = h.writeUserKubeconfig(shardUser(s), "kubeconfig-shard-"+s); err != nil {
			return err
		}
	}
	return nil
}

// writeUserKubeconfig adds a system:masters user named user and writes its
// kubeconfig to file in the work directory, whose path it returns.
func (h *harness) writeUserKubeconfig(user, file string) (string, error) {
	u, err := h.env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding the user %s: %w", user, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("writing the kubeconfig of %s: %w", user, err)
	}
	path := filepath.Join(h.dir, file)
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig of %s: %w", user, err)
	}
	return path, nil
}

// quietAPIServer turns off the API server's watch cache consistency
// check (feature DetectCacheInconsistency, on by default): every few
// minutes it lists each resource from etcd and digests every object, about
// 10 s of CPU with 40,000 Secrets present, in whichever scenario it falls
// (a floor's or the operator's), which moved a ratio by several percent
// between otherwise equal runs. Neither controller causes it.
func quietAPIServer(env *envtest.Environment) {
	env.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "DetectCacheInconsistency=false")
}

// configureAudit has the API server log the writes of the shards'
// managers (see auditPolicy) to apiserver-audit.log in the log directory.
func (h *harness) configureAudit() error {
	policy := filepath.Join(h.dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy()), 0o600); err != nil {
		return fmt.Errorf("writing the audit policy: %w", err)
	}
	h.audit = auditLog{path: filepath.Join(h.logDir, "apiserver-audit.log")}
	h.env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", h.audit.path).
		Set("audit-log-mode", "blocking")
	return nil
}

// close stops everything newHarness started and removes the work
// directory (the logs stay when -log-dir is set, or move out of it when
// keepLogs is set).
func (h *harness) close() {
	h.stopShards()
	if h.manager != nil && h.manager.running() {
		if _, err := h.manager.stop(syscall.SIGTERM); err != nil {
			log.Printf("stopping the manager: %v", err)
		}
	}
	if h.state != nil && h.state.running() {
		if _, err := h.state.stop(syscall.SIGTERM); err != nil {
			log.Printf("stopping the state server: %v", err)
		}
	}
	if h.stopTracker != nil {
		h.stopTracker() // an open watch would hold up the API server's shutdown
	}
	if h.env != nil {
		if err := h.env.Stop(); err != nil {
			log.Printf("stopping the control plane: %v", err)
		}
	}
	if h.keepLogs && h.opts.logDir == "" {
		h.saveLogs()
	}
	if err := os.RemoveAll(h.dir); err != nil {
		log.Printf("removing %s: %v", h.dir, err)
	}
}

// saveLogs moves the logs out of the work directory, which close removes,
// and says where they went.
func (h *harness) saveLogs() {
	kept, err := os.MkdirTemp("", "backend-operator-scale-logs-")
	if err != nil {
		log.Printf("keeping the logs: %v", err)
		return
	}
	if err := os.Rename(h.logDir, filepath.Join(kept, "logs")); err != nil {
		log.Printf("keeping the logs: %v", err)
		return
	}
	log.Printf("the manager's and the state server's logs are in %s", filepath.Join(kept, "logs"))
}

// startManager starts the manager and waits until its HttpBackend workers
// run.
func (h *harness) startManager(ctx context.Context) (*managerProcess, error) {
	if h.manager != nil {
		return nil, errors.New("the manager is already running")
	}
	h.starts++
	logPath := filepath.Join(h.logDir, "manager-"+strconv.Itoa(h.starts)+".log")
	m, err := startManager(h.managerBin, logPath, managerArgs(h.kubeconfig, h.ports, h.opts), h.ports)
	if err != nil {
		return nil, err
	}
	h.manager = m
	if err := m.waitWorkers(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	return m, nil
}

// stopManager stops the running manager with sig, if one runs, and
// returns how long it took to exit.
func (h *harness) stopManager(sig syscall.Signal) (time.Duration, error) {
	if h.manager == nil {
		return 0, nil
	}
	m := h.manager
	h.manager = nil
	return m.stop(sig)
}

// snapshot is the counters a scenario reads at its start and end.
type snapshot struct {
	// api are the API server's request counts.
	api requestCounts
	// own are the harness's request counts.
	own requestCounts
	// probes counts the requests the state server served.
	probes probeCounts
}

// snap reads the counters.
func (h *harness) snap(ctx context.Context) (snapshot, error) {
	own := h.counter.snapshot()
	probes := h.state.probes()
	body, err := h.raw.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return snapshot{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	families, err := parseFamilies(bytes.NewReader(body), apiRequestsMetric)
	if err != nil {
		return snapshot{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return snapshot{api: requestCountsFrom(families), own: own, probes: probes}, nil
}

// since returns the API requests made by others than the harness between
// before and after, and the state server's requests.
func since(before, after snapshot) (requestCounts, probeCounts) {
	return after.api.minus(before.api).minus(after.own.minus(before.own)), after.probes.minus(before.probes)
}

// measureStart is what a scenario with a running manager records before
// it acts: the API server's and the state server's counters, and the
// manager's CPU time.
type measureStart struct {
	before snapshot
	cpu    time.Duration
}

// startMeasuring records the counters and m's CPU time.
func (h *harness) startMeasuring(ctx context.Context, m *managerProcess) (measureStart, error) {
	before, err := h.snap(ctx)
	if err != nil {
		return measureStart{}, err
	}
	cpu, err := readCPU(m.pid())
	if err != nil {
		return measureStart{}, err
	}
	return measureStart{before: before, cpu: cpu}, nil
}

// managedBatch starts the manager when it is stopped, creates the
// namespaces of a new batch of n backends named after prefix, and records
// the counters: the start of a scenario that creates backends for the
// running manager.
func (h *harness) managedBatch(ctx context.Context, prefix string, n int) (*managerProcess, batch, measureStart, error) {
	if err := h.ensureManager(ctx); err != nil {
		return nil, batch{}, measureStart{}, err
	}
	m := h.manager
	b, err := h.newBatch(ctx, prefix, n)
	if err != nil {
		return nil, batch{}, measureStart{}, err
	}
	start, err := h.startMeasuring(ctx, m)
	if err != nil {
		return nil, batch{}, measureStart{}, err
	}
	return m, b, start, nil
}

// endMeasuring reads the counters and m's usage at the end of a scenario
// that startMeasuring began: the requests and probes since, and the CPU
// time since with the memory now.
func (h *harness) endMeasuring(ctx context.Context, m *managerProcess, start measureStart) (requestCounts, probeCounts, *managerUsage, error) {
	after, err := h.snap(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	usage, err := m.usage(start.cpu)
	if err != nil {
		return nil, nil, nil, err
	}
	requests, probes := since(start.before, after)
	return requests, probes, usage, nil
}

// burstOf creates the backends of b from the harness's workers and waits
// until all are Ready: it returns when the first create started, how long
// the creates took, and when the last backend was seen Ready.
func (h *harness) burstOf(ctx context.Context, scenario string, b batch) (first time.Time, createdIn time.Duration, last time.Time, err error) {
	first, err = createBackends(ctx, h.client, h.opts.workers, b.backends, h.state.url, nil)
	if err != nil {
		return first, 0, last, err
	}
	createdIn = time.Since(first)
	last, err = h.tracker.waitReady(ctx, scenario, b.backends, h.opts.waitTimeout(len(b.backends)))
	return first, createdIn, last, err
}

// newBatch plans a batch of n backends named after prefix and creates its
// namespaces.
func (h *harness) newBatch(ctx context.Context, prefix string, n int) (batch, error) {
	b := planBatch(prefix, n, h.opts.perNamespace)
	if err := createNamespaces(ctx, h.client, h.opts.workers, b.namespaces); err != nil {
		return batch{}, err
	}
	return b, nil
}
