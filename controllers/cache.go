package controllers

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/infrastate/backend-operator/controllers/internal/related"
)

// CacheOptions are the manager's cache settings: the namespaces to watch
// (all when empty), the objects of this API group of the manager's shard
// (all when shard is nil or empty; see WithShard) and trimmed objects.
func CacheOptions(namespaces []string, shard labels.Selector) cache.Options {
	var defaultNamespaces map[string]cache.Config
	if len(namespaces) > 0 {
		defaultNamespaces = make(map[string]cache.Config, len(namespaces))
		for _, ns := range namespaces {
			defaultNamespaces[ns] = cache.Config{}
		}
	}
	return cache.Options{DefaultNamespaces: defaultNamespaces, ByObject: shardObjects(shard), DefaultTransform: cacheTransform()}
}

// ClientOptions are the manager's client settings: Secrets and ConfigMaps
// are never cached, so that the operator does not hold every Secret of the
// cluster in memory. The reconcilers read the few they need directly, and
// the related watches (see relatedObjects) see the rest for metadata and
// keep only what the operator's objects name or write.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{
		DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}},
	}}
}

// lastAppliedAnnotation is where kubectl apply keeps the object it applied.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// cacheTransform trims what the manager's informers keep: managed fields and
// kubectl's last-applied-configuration of every object (the reconcilers
// read neither), and the annotations but the operator's content hash and
// stored size of any object an informer would watch for metadata only. The manager's own
// informers watch none (the related watches trim Secrets and ConfigMaps
// themselves), but a Secret created with `kubectl apply` carries its data
// in the last-applied-configuration annotation, which must not end up in
// the operator's memory through one added later.
func cacheTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		out, err := strip(in)
		if err != nil {
			return nil, fmt.Errorf("stripping managed fields: %w", err)
		}
		switch obj := out.(type) {
		case *metav1.PartialObjectMetadata:
			obj.Annotations = related.KeptAnnotations(obj.Annotations)
		case metav1.Object:
			// kubectl apply keeps a copy of the whole object in it: a
			// cached backend would weigh twice what it does.
			if _, ok := obj.GetAnnotations()[lastAppliedAnnotation]; ok {
				annotations := maps.Clone(obj.GetAnnotations())
				delete(annotations, lastAppliedAnnotation)
				obj.SetAnnotations(annotations)
			}
		}
		return out, nil
	}
}
