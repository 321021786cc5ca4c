package controllers

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// apiTraffic is what the reconcilers of a Reconcile case asked of the API
// server: the reads through their API reader (never a cache) and every
// write, as "<verb> <Kind> <name>" ("get Secret state-password", "patch
// HttpBackend web status").
type apiTraffic struct {
	reads, writes []string
}

// trafficRecorder records the API traffic of the reconcilers.
type trafficRecorder struct {
	mu      sync.Mutex
	traffic apiTraffic
}

// take returns the traffic recorded since the last call.
func (r *trafficRecorder) take() apiTraffic {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.traffic
	r.traffic = apiTraffic{}
	return t
}

func (r *trafficRecorder) read(c client.Client, verb string, obj any, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.traffic.reads = append(r.traffic.reads, describeRequest(c, verb, obj, name))
}

func (r *trafficRecorder) write(c client.Client, verb string, obj client.Object, sub string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := describeRequest(c, verb, obj, obj.GetName())
	if sub != "" {
		w += " " + sub
	}
	r.traffic.writes = append(r.traffic.writes, w)
}

// describeRequest is "<verb> <Kind> <name>" of a request about obj.
func describeRequest(c client.Client, verb string, obj any, name string) string {
	kind := fmt.Sprintf("%T", obj)
	if o, ok := obj.(client.Object); ok {
		if gvk, err := apiutil.GVKForObject(o, c.Scheme()); err == nil {
			kind = gvk.Kind
		}
	}
	if l, ok := obj.(client.ObjectList); ok {
		if gvk, err := apiutil.GVKForObject(l, c.Scheme()); err == nil {
			kind = gvk.Kind
		}
	}
	if name == "" {
		return verb + " " + kind
	}
	return verb + " " + kind + " " + name
}

// recordingReader is the reconcilers' API reader: the fake API server,
// recording each read.
type recordingReader struct {
	client.Client
	traffic *trafficRecorder
}

// Get records and reads.
func (r recordingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.traffic.read(r.Client, "get", obj, key.Name)
	return r.Client.Get(ctx, key, obj, opts...)
}

// List records and lists.
func (r recordingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.traffic.read(r.Client, "list", list, "")
	return r.Client.List(ctx, list, opts...)
}

// recordingClient is the reconcilers' client: the fake API server (which
// also stands for the manager's cache, so its reads are not recorded),
// recording each write.
type recordingClient struct {
	client.Client
	traffic *trafficRecorder
}

// Create records and creates.
func (c recordingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.traffic.write(c.Client, "create", obj, "")
	return c.Client.Create(ctx, obj, opts...)
}

// Update records and updates.
func (c recordingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.traffic.write(c.Client, "update", obj, "")
	return c.Client.Update(ctx, obj, opts...)
}

// Patch records and patches.
func (c recordingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.traffic.write(c.Client, "patch", obj, "")
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// Delete records and deletes.
func (c recordingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.traffic.write(c.Client, "delete", obj, "")
	return c.Client.Delete(ctx, obj, opts...)
}

// Status records the writes of status.
func (c recordingClient) Status() client.SubResourceWriter {
	return recordingStatusWriter{SubResourceWriter: c.Client.Status(), client: c}
}

// recordingStatusWriter records the status writes of a recordingClient.
type recordingStatusWriter struct {
	client.SubResourceWriter
	client recordingClient
}

// Patch records and patches status.
func (w recordingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.client.traffic.write(w.client.Client, "patch", obj, "status")
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// Update records and updates status.
func (w recordingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.client.traffic.write(w.client.Client, "update", obj, "status")
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}
