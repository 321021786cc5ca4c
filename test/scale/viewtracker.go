package main

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// objectViews keeps the latest view of each object of one kind an informer
// of the Ready tracker's cache sees, and, while it records, the anomalies
// seen on the objects it records: what went wrong with them at any moment,
// however short, not only at the end.
type objectViews[O client.Object, V any] struct {
	// view reads an object.
	view func(O) V

	mu     sync.Mutex
	latest map[types.NamespacedName]V
	// anomalies, while recording, says what is wrong with a recorded
	// object; nil otherwise.
	anomalies map[types.NamespacedName]func(V) []string
	seen      sightings
}

// watchViews adds an event handler to the Ready tracker's informer on
// obj's kind (started if it was not) that keeps the views of its objects.
func watchViews[O client.Object, V any](ctx context.Context, t *readyTracker, obj O, view func(O) V) (*objectViews[O, V], error) {
	v := &objectViews[O, V]{view: view, latest: map[types.NamespacedName]V{}}
	inf, err := t.cache.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("watching %T: %w", obj, err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    v.observe,
		UpdateFunc: func(_, obj any) { v.observe(obj) },
		DeleteFunc: v.forget,
	}); err != nil {
		return nil, fmt.Errorf("watching %T: %w", obj, err)
	}
	return v, nil
}

// observe records an added or updated object.
func (v *objectViews[O, V]) observe(obj any) {
	o, ok := obj.(O)
	if !ok {
		return
	}
	key := client.ObjectKeyFromObject(o)
	view := v.view(o)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.latest[key] = view
	if f := v.anomalies[key]; f != nil {
		v.seen.add(key, f(view))
	}
}

// forget drops a deleted object.
func (v *objectViews[O, V]) forget(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(O)
	if !ok {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.latest, client.ObjectKeyFromObject(o))
}

// views returns the latest views of keys; an object not seen is left out.
func (v *objectViews[O, V]) views(keys []types.NamespacedName) map[types.NamespacedName]V {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[types.NamespacedName]V, len(keys))
	for _, k := range keys {
		if view, ok := v.latest[k]; ok {
			out[k] = view
		}
	}
	return out
}

// record starts recording the anomalies of the objects of anomalies (a
// function per object), from their views now on; it forgets what an
// earlier recording saw.
func (v *objectViews[O, V]) record(anomalies map[types.NamespacedName]func(V) []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.anomalies, v.seen = anomalies, sightings{}
	for key, f := range anomalies {
		if view, ok := v.latest[key]; ok {
			v.seen.add(key, f(view))
		}
	}
}

// stopRecording stops recording and returns what was seen.
func (v *objectViews[O, V]) stopRecording() sightings {
	v.mu.Lock()
	defer v.mu.Unlock()
	seen := v.seen
	v.anomalies, v.seen = nil, nil
	return seen
}
