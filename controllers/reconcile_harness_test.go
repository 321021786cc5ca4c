package controllers

// The harness of the Reconcile-level tests (TestReconcile*): the
// reconcilers run against controller-runtime's fake client, carrying the
// production field indexes, with a fake clock, a scripted state client and
// an event recorder that keeps what it is given. No API server, no network:
// a case runs in milliseconds. A case that asks for one also gets a COS
// protocol server on loopback (costest), which the CosBackend reconciler
// reaches through the address policy, as in the envtest suite. The envtest
// suite (TestControllers) checks the same behaviour against a real API
// server and real state servers.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/conformance"
	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// Settings of the harness.
const (
	// harnessNamespace is the namespace of every object of the cases.
	harnessNamespace = "team-a"
	// wakeTimeout bounds the wait for a probe to end: the scripted state
	// client answers at once, so a probe that has not ended by then was
	// never submitted.
	wakeTimeout = 2 * time.Second
)

// harnessEpoch is the fake clock's time when a case starts.
var harnessEpoch = time.Date(2030, time.January, 1, 12, 0, 0, 0, time.UTC)

// newKindReconciler builds the reconciler of kind with opts, returning it
// and the base it embeds. It is the only place the tests name the
// reconcilers' constructors.
func newKindReconciler(kind string, c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts ...Option) (reconcile.Reconciler, *reconciler) {
	if kind == backendsv1alpha1.RemoteStateKind {
		r := newRemoteStateReconciler(c, apiReader, recorder, opts...)
		return r, &r.reconciler
	}
	backendKind, ok := lookupBackendKind(kind)
	if !ok {
		panic("no reconciler of kind " + kind)
	}
	r := newBackendReconciler(backendKind, c, apiReader, recorder, opts...)
	return r, &r.reconciler
}

// newKindObject returns an empty object of kind.
func newKindObject(kind string) statusObject {
	if kind == backendsv1alpha1.RemoteStateKind {
		return &backendsv1alpha1.RemoteState{}
	}
	backendKind, ok := lookupBackendKind(kind)
	if !ok {
		panic("no object of kind " + kind)
	}
	return backendKind.newObject()
}

// reconcileEnv is the world of one case: the fake API server, the fake
// clock, the scripted state client, the events, and one running
// reconciler per kind.
type reconcileEnv struct {
	t      *testing.T
	ctx    context.Context //nolint:containedctx // the case's context, which every step uses and t.Cleanup cancels
	client client.Client
	clock  *clocktesting.FakeClock
	state  *scriptedStateClient
	events *recordingRecorder
	// cos is the case's COS server, accepting the suite's credentials; nil
	// when the case asked for none (see startCos).
	cos *costest.Server
	// guard refuses, and records, lookups and dials of anything but
	// loopback by the reconcilers' COS clients (the state clients are
	// scripted).
	guard *loopbackOnly

	// traffic records the reconcilers' reads through their API reader and
	// their writes.
	traffic trafficRecorder
	// metrics are the series every reconciler of the case records, as
	// SetupAll shares one set between them.
	metrics *operatorMetrics
	// options are more options of the reconcilers, set before the first
	// one starts.
	options []Option

	reconcilers map[string]*runningReconciler
	// seenCalls and seenEvents count what earlier steps already compared.
	seenCalls, seenEvents int
}

// runningReconciler is a reconciler whose prober runs.
type runningReconciler struct {
	reconcile.Reconciler
	base *reconciler
	// stop stops the prober and waits for it.
	stop func()
}

// newReconcileEnv returns the world of a case holding objects, whose state
// client answers as script says, and whose client calls intercept (when
// set) instead of the fake's own functions.
func newReconcileEnv(t *testing.T, objects []client.Object, script stateScript, intercept *interceptor.Funcs) *reconcileEnv {
	t.Helper()
	scheme := testenv.Scheme()
	// A plain object tracker: the default one keeps managed fields, and
	// builds a REST mapper of the whole scheme on every write, which costs
	// more than the rest of a case. The reconcilers patch with merge
	// patches, which need no managed fields.
	tracker := clienttesting.NewObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder())
	builder := fake.NewClientBuilder().WithScheme(scheme).WithObjectTracker(tracker).
		WithStatusSubresource(&backendsv1alpha1.HttpBackend{}, &backendsv1alpha1.CosBackend{}, &backendsv1alpha1.RemoteState{})
	for _, ix := range fieldIndexes() {
		builder = builder.WithIndex(ix.obj, ix.field, ix.extract)
	}
	for _, obj := range learnedServers(t, objects) {
		builder = builder.WithObjects(obj)
	}
	if intercept != nil {
		builder = builder.WithInterceptorFuncs(*intercept)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &reconcileEnv{
		t:           t,
		ctx:         ctx,
		client:      builder.Build(),
		clock:       clocktesting.NewFakeClock(harnessEpoch),
		state:       &scriptedStateClient{script: script},
		events:      &recordingRecorder{},
		guard:       &loopbackOnly{},
		reconcilers: map[string]*runningReconciler{},
	}
	e.metrics = newOperatorMetrics(e.clock)
	t.Cleanup(func() {
		for _, r := range e.reconcilers {
			r.stop()
		}
		cancel()
		if got := e.guard.attempts(); len(got) > 0 {
			t.Errorf("the reconcilers tried to reach names or addresses other than loopback: %q", got)
		}
	})
	return e
}

// learnedServers are copies of objects in which every HttpBackend that
// locks, and whose status.server is not set, has learned that its server
// behaves as Terraform's own test server does (referenceServer), with its
// current addresses and credentials: the lock features of the cases run
// without the check that learns it, which the scripted client does not
// answer.
func learnedServers(t *testing.T, objects []client.Object) []client.Object {
	t.Helper()
	var copies []client.Object
	for _, obj := range objects {
		copies = append(copies, obj.DeepCopyObject().(client.Object))
	}
	reader := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(copies...).Build()
	for _, obj := range copies {
		backend, ok := obj.(*backendsv1alpha1.HttpBackend)
		learned := ok && backend.Status.Server != nil && backend.Status.Server.CheckedWith == ""
		if !ok || (backend.Status.Server != nil && !learned) || backend.Spec.LockAddress == "" || backend.Spec.UnlockAddress == "" {
			continue
		}
		refs := referenceReader{reader: reader, metadata: reader, contents: related.NewContents(), namespace: backend.Namespace, policy: ReferencePolicyNamespace}
		secrets, err := resolveHTTPSecrets(t.Context(), refs, backend)
		if err != nil {
			continue // the case is about the broken reference
		}
		if learned {
			backend.Status.Server.CheckedWith = serverCheckInputs(backend.Spec, secrets)
			continue
		}
		backend.Status.Server = serverStatus(referenceServer(t), serverCheckInputs(backend.Spec, secrets), harnessEpoch)
	}
	return copies
}

// learnedAs is backend whose status.server says its server behaves as b,
// learned with its current addresses and credentials (which
// learnedServers fills in).
func learnedAs(backend *backendsv1alpha1.HttpBackend, b conformance.Behaviour) *backendsv1alpha1.HttpBackend {
	backend.Status.Server = serverStatus(b, "", harnessEpoch)
	return backend
}

// emptyBodyOnly is a server whose conflicts name the holder and which
// releases a lock only on an empty UNLOCK body.
var emptyBodyOnly = conformance.Behaviour{
	LocksExclusive: true, ConflictStatus: http.StatusLocked, HolderInConflicts: true, HolderVerbatim: true,
	ConflictFields: map[string]conformance.FieldSource{"ID": conformance.FieldHolder, "Operation": conformance.FieldHolder, "Info": conformance.FieldHolder,
		"Who": conformance.FieldHolder, "Version": conformance.FieldHolder, "Created": conformance.FieldHolder, "Path": conformance.FieldHolder},
	UnlockBodies: []conformance.UnlockBody{conformance.BodyEmpty}, LockCreatesState: new(false),
}

// startCos starts the case's COS server, accepting the suite's
// credentials (cosSecretID, cosSecretKey), and lets prepare fill it before
// any reconciler starts. The server is closed when the case ends.
func (e *reconcileEnv) startCos(prepare func(s *costest.Server)) {
	e.t.Helper()
	e.cos = costest.NewServer(e.t)
	e.cos.AddCredentials(cosSecretID, cosSecretKey)
	prepare(e.cos)
}

// reconciler returns the running reconciler of kind, starting one the
// first time.
func (e *reconcileEnv) reconciler(kind string) *runningReconciler {
	if r, ok := e.reconcilers[kind]; ok {
		return r
	}
	opts := []Option{
		withClock(e.clock),
		withMetrics(e.metrics),
		withStateClientFactory(func(cfg stateclient.Config, _ logr.Logger) (stateClient, error) {
			e.state.built(cfg)
			return e.state, nil
		}),
		// The COS clients are built as in production, through the address
		// policy, with a resolver and a final dial that allow loopback
		// only, as in the envtest suite.
		withResolver(e.guard), withDial(e.guard.DialContext),
	}
	if e.cos != nil {
		opts = append(opts, WithCosServiceURL(e.cos.ServiceURL()))
	}
	opts = append(opts, e.options...)
	r, base := newKindReconciler(kind, recordingClient{Client: e.client, traffic: &e.traffic},
		recordingReader{Client: e.client, traffic: &e.traffic}, e.events, opts...)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = base.probes.Start(ctx)
	}()
	running := &runningReconciler{Reconciler: r, base: base, stop: func() {
		cancel()
		select {
		case <-done:
		case <-time.After(wakeTimeout):
			e.t.Errorf("the %s prober did not stop within %s", kind, wakeTimeout)
		}
	}}
	e.reconcilers[kind] = running
	return running
}

// restart replaces the reconciler of kind with a new one, as a manager
// restart does: the probe schedule and the prober start empty.
func (e *reconcileEnv) restart(kind string) {
	if r, ok := e.reconcilers[kind]; ok {
		r.stop()
		delete(e.reconcilers, kind)
	}
}

// reconcileOnce reconciles target once; an error fails the test.
func (e *reconcileEnv) reconcileOnce(target objectRef) ctrl.Result {
	e.t.Helper()
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: harnessNamespace, Name: target.name}}
	res, err := e.reconciler(target.kind).Reconcile(e.ctx, req)
	if err != nil {
		e.t.Fatalf("Reconcile(%s %s) = %v", target.kind, target.name, err)
	}
	return res
}

// awaitProbe waits until a probe of target's kind ends and asks for its
// object to be reconciled, as the controller's watch on the wake channel
// does; it fails the test after wakeTimeout.
func (e *reconcileEnv) awaitProbe(target objectRef) {
	e.t.Helper()
	select {
	case ev := <-e.reconciler(target.kind).base.wake:
		if ev.Object.GetName() != target.name || ev.Object.GetNamespace() != harnessNamespace {
			e.t.Fatalf("a probe of %s/%s ended, want one of %s", ev.Object.GetNamespace(), ev.Object.GetName(), target.name)
		}
	case <-time.After(wakeTimeout):
		e.t.Fatalf("no probe of %s %s ended within %s", target.kind, target.name, wakeTimeout)
	}
}

// reconcileUntilProbed reconciles target, waits for the probe that
// reconcile submitted to end, and reconciles again to write its result.
// It returns the result of the second Reconcile.
func (e *reconcileEnv) reconcileUntilProbed(target objectRef) ctrl.Result {
	e.t.Helper()
	e.reconcileOnce(target)
	e.awaitProbe(target)
	return e.reconcileOnce(target)
}

// settle waits until no probe is queued or running, so that the calls a
// step compares are all made.
func (e *reconcileEnv) settle() {
	e.t.Helper()
	deadline := time.Now().Add(wakeTimeout)
	for kind, r := range e.reconcilers {
		for {
			busy := r.base.probes.Pending()
			if busy == 0 {
				break
			}
			if time.Now().After(deadline) {
				e.t.Fatalf("%d probes of %s still under way after %s", busy, kind, wakeTimeout)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// object reads target from the fake API server.
func (e *reconcileEnv) object(target objectRef) statusObject {
	e.t.Helper()
	obj := newKindObject(target.kind)
	if err := e.client.Get(e.ctx, types.NamespacedName{Namespace: harnessNamespace, Name: target.name}, obj); err != nil {
		e.t.Fatalf("reading %s %s: %v", target.kind, target.name, err)
	}
	return obj
}

// httpBackend reads the HttpBackend name.
func (e *reconcileEnv) httpBackend(name string) *backendsv1alpha1.HttpBackend {
	e.t.Helper()
	return e.object(objectRef{backendsv1alpha1.HttpBackendKind, name}).(*backendsv1alpha1.HttpBackend)
}

// configMap and secret read a ConfigMap or a Secret; nil when it does not
// exist.
func (e *reconcileEnv) configMap(name string) *corev1.ConfigMap {
	e.t.Helper()
	cm := &corev1.ConfigMap{}
	if !e.getIfExists(name, cm) {
		return nil
	}
	return cm
}

func (e *reconcileEnv) secret(name string) *corev1.Secret {
	e.t.Helper()
	s := &corev1.Secret{}
	if !e.getIfExists(name, s) {
		return nil
	}
	return s
}

// getIfExists reads the object name of the harness namespace into obj and
// reports whether it exists.
func (e *reconcileEnv) getIfExists(name string, obj client.Object) bool {
	e.t.Helper()
	if err := e.client.Get(e.ctx, types.NamespacedName{Namespace: harnessNamespace, Name: name}, obj); err != nil {
		if client.IgnoreNotFound(err) != nil {
			e.t.Fatalf("reading %T %s: %v", obj, name, err)
		}
		return false
	}
	return true
}

// create stores obj, as a user would.
func (e *reconcileEnv) create(obj client.Object) {
	e.t.Helper()
	if err := e.client.Create(e.ctx, obj.DeepCopyObject().(client.Object)); err != nil {
		e.t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

// update reads obj's current version, changes it with mutate and writes
// it back.
func (e *reconcileEnv) update(obj client.Object, mutate func()) {
	e.t.Helper()
	if err := e.client.Get(e.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		e.t.Fatalf("reading %s: %v", obj.GetName(), err)
	}
	mutate()
	if err := e.client.Update(e.ctx, obj); err != nil {
		e.t.Fatalf("updating %s: %v", obj.GetName(), err)
	}
}

// updateSpec changes the spec of the object target with mutate and moves
// its generation on, as the API server does for a spec change (the fake
// client does not).
func (e *reconcileEnv) updateSpec(target objectRef, mutate func(obj client.Object)) {
	e.t.Helper()
	obj := newKindObject(target.kind)
	obj.SetName(target.name)
	obj.SetNamespace(harnessNamespace)
	e.update(obj, func() {
		mutate(obj)
		obj.SetGeneration(obj.GetGeneration() + 1)
	})
}

// objectRef names the object a case reconciles.
type objectRef struct {
	kind, name string
}

// stateScript says how the scripted state client answers. Each list gives
// the answers of successive calls of one method, the last repeating; an
// empty list answers as a healthy server with no state and a free lock.
type stateScript struct {
	fetch                []fetchAnswer
	stream               []streamAnswer
	lock                 []error
	unlock               []error
	forceUnlock          []error
	forceUnlockEmptyBody []error
}

// fetchAnswer is one answer of FetchSummary.
type fetchAnswer struct {
	summary *stateclient.StateSummary
	err     error
}

// streamAnswer is one answer of StreamState: state is the body (nil: no
// state), or err the failure.
type streamAnswer struct {
	state []byte
	err   error
}

// scriptedStateClient is a stateClient that answers from a stateScript and
// records its calls, as "Method" or "Method <lock ID>".
type scriptedStateClient struct {
	mu      sync.Mutex
	script  stateScript
	calls   []string
	configs []stateclient.Config
	// counts is the number of calls of each method.
	counts map[string]int
	// idleClosed counts the calls of CloseIdleConnections, which calls
	// does not record.
	idleClosed int
}

var _ stateClient = (*scriptedStateClient)(nil)

// built records the configuration a state client was built from.
func (s *scriptedStateClient) built(cfg stateclient.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.configs = append(s.configs, cfg)
}

// record records a call of method and returns its index among the calls
// of method.
func (s *scriptedStateClient) record(method, arg string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	call := method
	if arg != "" {
		call += " " + arg
	}
	s.calls = append(s.calls, call)
	if s.counts == nil {
		s.counts = map[string]int{}
	}
	n := s.counts[method]
	s.counts[method]++
	return n
}

// nth is answers[n], the last answer past the end, or zero when there is
// none.
func nth[T any](answers []T, n int) T {
	var zero T
	if len(answers) == 0 {
		return zero
	}
	return answers[min(n, len(answers)-1)]
}

// CloseIdleConnections counts its calls.
func (s *scriptedStateClient) CloseIdleConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idleClosed++
}

// closedIdle returns the number of CloseIdleConnections calls so far.
func (s *scriptedStateClient) closedIdle() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idleClosed
}

// recordedCalls returns the calls made so far.
func (s *scriptedStateClient) recordedCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func (s *scriptedStateClient) FetchSummary(context.Context, *statefile.Decryption) (*stateclient.StateSummary, error) {
	a := nth(s.script.fetch, s.record("FetchSummary", ""))
	if a.summary == nil && a.err == nil {
		return &stateclient.StateSummary{}, nil
	}
	return a.summary, a.err
}

func (s *scriptedStateClient) StreamState(_ context.Context, read func(io.Reader) error) (bool, int64, error) {
	a := nth(s.script.stream, s.record("StreamState", ""))
	if a.err != nil {
		return false, 0, a.err
	}
	if a.state == nil {
		return false, 0, nil
	}
	return true, int64(len(a.state)), read(bytes.NewReader(a.state))
}

func (s *scriptedStateClient) Lock(_ context.Context, info stateclient.LockInfo) (string, error) {
	if err := nth(s.script.lock, s.record("Lock", info.ID)); err != nil {
		return "", err
	}
	return info.ID, nil
}

// UnlockWithBody answers from the script's unlock answers, and records
// "Unlock <the body's ID>".
func (s *scriptedStateClient) UnlockWithBody(_ context.Context, body []byte) error {
	var info stateclient.LockInfo
	if err := json.Unmarshal(body, &info); err != nil {
		info.ID = "(not a LockInfo)"
	}
	return nth(s.script.unlock, s.record("Unlock", info.ID))
}

// FetchStatus answers 200: the scripts hold a state.
func (s *scriptedStateClient) FetchStatus(context.Context) (int, error) {
	s.record("FetchStatus", "")
	return http.StatusOK, nil
}

// LocksConfigured is true: the scripts lock.
func (s *scriptedStateClient) LocksConfigured() bool { return true }

func (s *scriptedStateClient) ForceUnlock(_ context.Context, id string) error {
	return nth(s.script.forceUnlock, s.record("ForceUnlock", id))
}

func (s *scriptedStateClient) ForceUnlockEmptyBody(context.Context) error {
	return nth(s.script.forceUnlockEmptyBody, s.record("ForceUnlockEmptyBody", ""))
}

// UpdateFrom records the lock ID: no reconcile harness script writes a
// state.
func (s *scriptedStateClient) UpdateFrom(_ context.Context, lockID string, _ io.ReadSeeker, _ int64, _ [16]byte) error {
	s.record("UpdateFrom", lockID)
	return nil
}

// recordedEvent is one event a reconciler emitted.
type recordedEvent struct {
	Object                     string
	Type, Reason, Action, Note string
}

// recordingRecorder is an events.EventRecorder that keeps every event.
type recordingRecorder struct {
	mu     sync.Mutex
	events []recordedEvent
}

var _ events.EventRecorder = (*recordingRecorder)(nil)

func (r *recordingRecorder) Eventf(regarding, _ runtime.Object, eventType, reason, action, note string, args ...any) {
	name := ""
	if obj, ok := regarding.(client.Object); ok {
		name = obj.GetName()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recordedEvent{Object: name, Type: eventType, Reason: reason, Action: action, Note: fmt.Sprintf(note, args...)})
}

// recorded returns the events emitted so far.
func (r *recordingRecorder) recorded() []recordedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recordedEvent(nil), r.events...)
}

// reconcileCase is one row of a Reconcile table: the objects stored before
// the first step, the state client's script, the object the steps
// reconcile, and the steps.
type reconcileCase struct {
	objects []client.Object
	script  stateScript
	// intercept, when set, replaces calls of the fake client.
	intercept *interceptor.Funcs
	// cos, when set, starts a COS server for the case and prepares it
	// (buckets, states, locks); see reconcileEnv.startCos.
	cos func(s *costest.Server)
	// options are more options of the case's reconcilers.
	options []Option
	target  objectRef
	steps   []reconcileStep
}

// reconcileStep changes the world, reconciles, and compares what follows
// with what it wants. The events and state client calls it wants are
// those of this step alone; nil wants none.
type reconcileStep struct {
	name string
	// before changes the world first: objects, the clock.
	before func(e *reconcileEnv)
	// do reconciles; nil is reconcileOnce.
	do func(e *reconcileEnv, target objectRef) ctrl.Result
	// wantRequeue bounds the RequeueAfter of the result do returns; nil
	// checks nothing.
	wantRequeue *requeueRange
	// wantConditions are the target's conditions after the step, compared
	// by type, status and reason; nil checks nothing.
	wantConditions []metav1.Condition
	wantEvents     []recordedEvent
	wantCalls      []string
	// wantTraffic is what the step's reconciles asked of the API server;
	// nil checks nothing.
	wantTraffic *apiTraffic
	// check makes further assertions.
	check func(t *testing.T, e *reconcileEnv)
}

// requeueRange bounds a result's RequeueAfter.
type requeueRange struct{ min, max time.Duration }

// requeueWithin wants a RequeueAfter in [lo, hi].
func requeueWithin(lo, hi time.Duration) *requeueRange { return &requeueRange{lo, hi} }

// noRequeue wants no RequeueAfter.
var noRequeue = &requeueRange{}

// Reconcile actions of the steps.
var (
	reconcileOnce = func(e *reconcileEnv, target objectRef) ctrl.Result {
		e.t.Helper()
		return e.reconcileOnce(target)
	}
	reconcileUntilProbed = func(e *reconcileEnv, target objectRef) ctrl.Result {
		e.t.Helper()
		return e.reconcileUntilProbed(target)
	}
	// awaitProbeAndReconcile waits for a probe an earlier step submitted
	// and reconciles its object.
	awaitProbeAndReconcile = func(e *reconcileEnv, target objectRef) ctrl.Result {
		e.t.Helper()
		e.awaitProbe(target)
		return e.reconcileOnce(target)
	}
	// restartAndReconcile reconciles with a new reconciler, as after a
	// manager restart.
	restartAndReconcile = func(e *reconcileEnv, target objectRef) ctrl.Result {
		e.t.Helper()
		e.restart(target.kind)
		return e.reconcileOnce(target)
	}
)

// conditionOptions compare conditions by type, status and reason, in any
// order.
var conditionOptions = cmp.Options{
	cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime", "Message", "ObservedGeneration"),
	cmpopts.SortSlices(func(a, b metav1.Condition) bool { return a.Type < b.Type }),
	cmpopts.EquateEmpty(),
}

// eventOptions compare events without their notes.
var eventOptions = cmp.Options{cmpopts.IgnoreFields(recordedEvent{}, "Note"), cmpopts.EquateEmpty()}

// wantCond is a condition of type t with status and reason, as cases want
// them.
func wantCond(t string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason}
}

// runReconcileCases runs every case of a table as a subtest.
func runReconcileCases(t *testing.T, cases map[string]reconcileCase) {
	t.Helper()
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		tc := cases[name]
		t.Run(name, func(t *testing.T) { runReconcileCase(t, tc) })
	}
}

// runReconcileCase runs the steps of tc in order.
func runReconcileCase(t *testing.T, tc reconcileCase) {
	t.Helper()
	e := newReconcileEnv(t, tc.objects, tc.script, tc.intercept)
	e.options = tc.options
	if tc.cos != nil {
		e.startCos(tc.cos)
	}
	for i, step := range tc.steps {
		name := step.name
		if name == "" {
			name = fmt.Sprintf("step %d", i+1)
		}
		if step.before != nil {
			step.before(e)
		}
		do := step.do
		if do == nil {
			do = reconcileOnce
		}
		res := do(e, tc.target)
		e.settle()

		if w := step.wantRequeue; w != nil && (res.RequeueAfter < w.min || res.RequeueAfter > w.max) {
			t.Errorf("%s: RequeueAfter = %s, want within [%s, %s]", name, res.RequeueAfter, w.min, w.max)
		}
		if step.wantConditions != nil {
			got := *e.object(tc.target).StatusConditions()
			if diff := cmp.Diff(step.wantConditions, got, conditionOptions); diff != "" {
				t.Errorf("%s: conditions (-want +got):\n%s", name, diff)
			}
		}
		recorded := e.events.recorded()
		if diff := cmp.Diff(step.wantEvents, recorded[e.seenEvents:], eventOptions); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", name, diff)
		}
		e.seenEvents = len(recorded)
		calls := e.state.recordedCalls()
		if diff := cmp.Diff(step.wantCalls, calls[e.seenCalls:], cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: state client calls (-want +got):\n%s", name, diff)
		}
		e.seenCalls = len(calls)
		traffic := e.traffic.take()
		if step.wantTraffic != nil {
			if diff := cmp.Diff(*step.wantTraffic, traffic, cmp.AllowUnexported(apiTraffic{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: API reads and writes (-want +got):\n%s", name, diff)
			}
		}
		if step.check != nil {
			step.check(t, e)
		}
		if t.Failed() {
			t.FailNow() // later steps build on this one
		}
	}
}

// Fixtures of the cases.
const (
	// harnessAddress is the address of the cases' backends; nothing
	// connects to it.
	harnessAddress = "https://state.example.com/team-a"
	// harnessPassword is the password the cases' Secret holds.
	harnessPassword = "harness-Pa55word-value"
)

// stored returns obj as the API server stores a new object: with a UID
// derived from its name, generation 1 and status.observedGeneration -1
// (the API's default), which the fake client does not set.
func stored[T statusObject](obj T) T {
	obj.SetUID(types.UID("uid-" + obj.GetName()))
	obj.SetGeneration(1)
	*obj.StatusObservedGeneration() = -1
	return obj
}

// passwordSecret is the Secret "state-password" of the cases' backends.
func passwordSecret() *corev1.Secret {
	return builders.MakeSecret("state-password", harnessNamespace).Data(map[string]string{"password": harnessPassword}).Obj()
}
