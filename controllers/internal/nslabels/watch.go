package nslabels

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
)

// namespaces is the resource watched.
var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// DefaultRecheckInterval is how often a manager that may not watch
// namespaces asks again whether it may: a ClusterRole added later takes
// effect without a restart.
const DefaultRecheckInterval = time.Minute

// Handler receives a namespace whose labels became known or changed (its
// creation, a change of its labels, and, once the labels are first known,
// every namespace), or its deletion. It must not block.
type Handler func(ns *metav1.PartialObjectMetadata, deleted bool)

// Watch holds the labels of every namespace. Start it with the manager.
type Watch struct {
	client metadata.Interface
	// allowed reports whether the manager may list and watch namespaces.
	allowed func(context.Context) (bool, error)
	recheck time.Duration

	mu sync.RWMutex
	// store holds the namespaces once their first list is done; nil
	// before, and for as long as the manager may not watch them.
	store toolscache.Store
	// unknown says why the labels are not known while store is nil.
	unknown  error
	handlers []Handler
	// settled is closed once the labels are known, or known to be
	// unknown (see WaitForSettled).
	settled     chan struct{}
	settledOnce sync.Once
}

// New returns the watch of namespaces through client, which starts once
// allowed says the manager may list and watch them (see MayWatch), asking
// again every recheck until it may.
func New(client metadata.Interface, allowed func(context.Context) (bool, error), recheck time.Duration) *Watch {
	return &Watch{client: client, allowed: allowed, recheck: recheck, unknown: errNotListed, settled: make(chan struct{})}
}

// ErrUnknown is the error of Labels while the labels are not known: its
// message says why.
var ErrUnknown = errors.New("the labels of namespaces are unknown")

// ErrNotAllowed is why the labels are unknown to a manager that may not
// list and watch namespaces.
var ErrNotAllowed = errors.New("the manager may not list and watch namespaces")

// errNotListed is why the labels are unknown until the first list.
var errNotListed = errors.New("the namespaces are not listed yet")

// Labels returns the labels of namespace, none when it does not exist,
// or an error wrapping ErrUnknown that says why they are not known.
func (w *Watch) Labels(namespace string) (map[string]string, error) {
	w.mu.RLock()
	store, unknown := w.store, w.unknown
	w.mu.RUnlock()
	if store == nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknown, unknown)
	}
	obj, found, err := store.GetByKey(namespace)
	if err != nil || !found {
		return nil, err //nolint:wrapcheck // the store's own error, which it never returns
	}
	return maps.Clone(obj.(*metav1.PartialObjectMetadata).Labels), nil
}

// AddHandler registers h for every change from now on.
func (w *Watch) AddHandler(h Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlers = append(w.handlers, h)
}

// WaitForSettled waits until the labels are known, or known to be
// unknown (the manager may not watch namespaces), or ctx ends.
func (w *Watch) WaitForSettled(ctx context.Context) error {
	select {
	case <-w.settled:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the labels of namespaces: %w", ctx.Err())
	}
}

// Start asks whether the manager may list and watch namespaces and,
// once it may, watches them until ctx ends.
func (w *Watch) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("namespace-labels")
	for {
		ok, err := w.allowed(ctx)
		switch {
		case ok && err == nil:
			return w.run(ctx)
		case err != nil:
			w.setUnknown(fmt.Errorf("the operator could not ask the API server whether it may watch namespaces: %w", err))
			log.Error(err, "Asking whether the manager may watch namespaces")
		default:
			w.setUnknown(ErrNotAllowed)
			log.V(1).Info("The manager may not list and watch namespaces: namespace selectors match nothing", "recheck", w.recheck)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(w.recheck):
		}
	}
}

// setUnknown records why the labels are not known, and that this is
// settled for now.
func (w *Watch) setUnknown(why error) {
	w.mu.Lock()
	w.unknown = why
	w.mu.Unlock()
	w.settledOnce.Do(func() { close(w.settled) })
}

// run watches the namespaces until ctx ends. The handlers get every
// namespace once the first list is done, then every change: a reconcile
// they cause reads labels that are known.
func (w *Watch) run(ctx context.Context) error {
	resource := w.client.Resource(namespaces)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return resource.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return resource.Watch(ctx, opts)
		},
	}
	// A client that cannot stream the first list (a fake) is listed.
	watcher := toolscache.ToListWatcherWithWatchListSemantics(lw, w.client)
	informer := toolscache.NewSharedIndexInformerWithOptions(watcher, &metav1.PartialObjectMetadata{}, toolscache.SharedIndexInformerOptions{})
	if err := informer.SetTransform(trim); err != nil {
		return fmt.Errorf("trimming namespaces: %w", err)
	}
	go informer.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil
	}
	w.mu.Lock()
	w.store = informer.GetStore()
	w.mu.Unlock()
	w.settledOnce.Do(func() { close(w.settled) })
	// Registered after the first list, the handler gets every namespace
	// held, then every change.
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.fire(obj, false) },
		UpdateFunc: func(before, after any) {
			if !maps.Equal(labelsOf(before), labelsOf(after)) {
				w.fire(after, false)
			}
		},
		DeleteFunc: func(obj any) { w.fire(obj, true) },
	}); err != nil {
		return fmt.Errorf("handling the changes of namespaces: %w", err)
	}
	<-ctx.Done()
	return nil
}

// fire calls every handler with the namespace obj.
func (w *Watch) fire(obj any, deleted bool) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	ns, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	w.mu.RLock()
	handlers := w.handlers
	w.mu.RUnlock()
	for _, h := range handlers {
		h(ns, deleted)
	}
}

// labelsOf returns the labels of a namespace the informer holds.
func labelsOf(obj any) map[string]string {
	if ns, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return ns.Labels
	}
	return nil
}

// trim keeps of a namespace what the watch needs: its name, labels and
// version.
func trim(obj any) (any, error) {
	ns, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: ns.Name, UID: ns.UID, ResourceVersion: ns.ResourceVersion, Labels: ns.Labels,
			DeletionTimestamp: ns.DeletionTimestamp},
	}, nil
}
