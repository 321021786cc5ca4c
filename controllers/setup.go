package controllers

import (
	"context"
	"fmt"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/nslabels"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/controllers/internal/related"
)

// SetupAll registers the field indexes and the reconcilers of every kind
// of this package with mgr.
func SetupAll(ctx context.Context, mgr ctrl.Manager, opts ...Option) error {
	for _, ix := range fieldIndexes() {
		if err := mgr.GetFieldIndexer().IndexField(ctx, ix.obj, ix.field, ix.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.field, err)
		}
	}

	// One prober for every kind: its bounds are the manager's, and each
	// namespace's share of them spans kinds.
	o := newOptions(opts)
	pool := probes.NewPool(o.maxConcurrentProbes, o.maxConcurrentProbesPerNamespace, o.clock, probes.WithMemory(o.tenantBudgets.readMemory))
	if err := mgr.Add(pool); err != nil {
		return fmt.Errorf("adding the prober: %w", err)
	}
	// The kinds whose related.ReferencesIndex names Secrets and ConfigMaps, and
	// those that render them under names of their own.
	lists := []func() client.ObjectList{newRemoteStateList}
	var renderers []func() client.Object
	for _, kind := range backendKinds {
		lists = append(lists, kind.newList)
		renderers = append(renderers, func() client.Object { return kind.newObject() })
	}
	// One memory of referenced contents: a Secret read for a backend is
	// not read again for the RemoteStates reading it.
	contents := related.NewContents()
	// One watch of the Secrets and ConfigMaps related to the objects of
	// every kind, holding only those.
	mc, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("building a metadata client: %w", err)
	}
	watches := related.NewWatches(mgr.GetCache(), mc, o.watchNamespaces, lists, renderers, contents)
	// A shard keeps the rendered and published objects of its own
	// backends and RemoteStates only.
	owners := map[string]func() client.Object{backendsv1alpha1.RemoteStateKind: func() client.Object { return &backendsv1alpha1.RemoteState{} }}
	for _, kind := range backendKinds {
		owners[kind.name()] = func() client.Object { return kind.newObject() }
	}
	watches.HoldOwnedBy(owners)
	watches.SetOwnReferrers(ownReferrersOf(watchReader(mgr), backendKinds))
	// The watches count the objects the operator wrote, from their first
	// lists on: the API storage each namespace uses is known before any
	// write, and every deletion gives its bytes back.
	watches.Observe(o.tenantBudgets.stored.Observe)
	if err := mgr.Add(watches); err != nil {
		return fmt.Errorf("adding the watches of Secrets and ConfigMaps: %w", err)
	}
	// One watch of the labels of namespaces, where the manager may list
	// and watch them: what the OutputGrants' selectors match.
	namespaceLabels := nslabels.New(mc, nslabels.MayWatch(mgr.GetClient()), nslabels.DefaultRecheckInterval)
	if err := mgr.Add(namespaceLabels); err != nil {
		return fmt.Errorf("adding the watch of namespaces: %w", err)
	}
	opts = append([]Option{withProbeGrace(defaultProbeGrace)}, opts...) // a new array: never into the caller's
	// One set of series, served by the manager's metrics endpoint.
	if err := o.metrics.register(ctrlmetrics.Registry); err != nil {
		return err
	}
	// The queue of probes and the budgets' use, read at each scrape.
	if err := registerReplacing(ctrlmetrics.Registry, append(probeCounts(pool), o.tenantBudgets.collector())...); err != nil {
		return err
	}
	// One set of circuits: a server that left one of a namespace's
	// requests unanswered is paused for every kind's probes, reads and
	// locks of that namespace.
	opts = append(opts, withTenantBudgets(o.tenantBudgets), withCircuits(o.circuits), withProber(pool), withContents(contents), withRelated(watches), withDecryptions(o.decryptions), withMetrics(o.metrics),
		withNamespaceLabels(namespaceLabels))

	recorder := mgr.GetEventRecorder("backend-operator")
	c, reader := mgr.GetClient(), mgr.GetAPIReader()
	for _, kind := range backendKinds {
		r := newBackendReconciler(kind, c, reader, recorder, opts...)
		if err := r.setupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", kind.name(), err)
		}
	}
	if err := newRemoteStateReconciler(c, reader, recorder, opts...).setupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the RemoteState controller: %w", err)
	}
	if err := newStateLockReconciler(c, reader, recorder, opts...).setupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the StateLock controller: %w", err)
	}
	if err := newOutputGrantReconciler(c, reader, recorder, opts...).setupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the OutputGrant controller: %w", err)
	}
	if err := newStateHistoryReconciler(c, reader, recorder, opts...).setupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the StateHistory controller: %w", err)
	}
	if err := newStateRestoreReconciler(c, reader, recorder, opts...).setupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the StateRestore controller: %w", err)
	}
	return nil
}

// fieldIndex is one field index of the manager's cache.
type fieldIndex struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

// fieldIndexes are the field indexes the reconcilers and their watches
// read: every backend kind's references, the backend and references of
// RemoteStates, and the backend of StateLocks.
func fieldIndexes() []fieldIndex {
	var indexes []fieldIndex
	for _, kind := range backendKinds {
		indexes = append(indexes, fieldIndex{kind.newObject(), related.ReferencesIndex, backendReferences(kind)})
	}
	return append(indexes,
		fieldIndex{&backendsv1alpha1.RemoteState{}, backendRefIndex, remoteStateBackend},
		fieldIndex{&backendsv1alpha1.RemoteState{}, related.ReferencesIndex, remoteStateReferences},
		fieldIndex{&backendsv1alpha1.RemoteState{}, producerIndex, remoteStateProducer},
		fieldIndex{&backendsv1alpha1.StateLock{}, backendRefIndex, stateLockBackend},
		fieldIndex{&backendsv1alpha1.StateHistory{}, backendRefIndex, stateHistoryBackends},
		fieldIndex{&backendsv1alpha1.StateHistory{}, historyPrefixIndex, stateHistoryPrefix},
		fieldIndex{&backendsv1alpha1.StateRestore{}, backendRefIndex, stateRestoreHistory},
	)
}

// newBackendReconciler returns the reconciler of a backend kind, writing
// through c and reading Secrets and ConfigMaps through apiReader, which
// must not be a cache.
func newBackendReconciler(kind backendKind, c client.Client, apiReader client.Reader, recorder events.EventRecorder, opts ...Option) *backendReconciler {
	r := &backendReconciler{reconciler: newReconciler(c, apiReader, recorder, opts), kind: kind}
	r.forgetMetrics = func(key types.NamespacedName) { r.metrics.forgetBackend(kind.name(), key.Namespace, key.Name) }
	return r
}
