package controllers

import (
	"context"
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateserver"
)

// stateserverFault makes the state server answer status to every request
// for path until the spec ends.
func stateserverFault(path string, status int) stateserver.Fault {
	DeferCleanup(stateServer.ClearFaults)
	return stateserver.Fault{Path: path, Status: status}
}

// eventReasons lists the reasons of the events recorded in a namespace.
func eventReasons(ctx context.Context, g Gomega, namespace string) []string {
	events := namespaceEvents(ctx, g, namespace)
	reasons := make([]string, 0, len(events))
	for _, e := range events {
		reasons = append(reasons, e.Reason)
	}
	return reasons
}

// eventMessages are the notes of the events of reason in namespace.
func eventMessages(ctx context.Context, g Gomega, namespace, reason string) []string {
	var notes []string
	for _, e := range namespaceEvents(ctx, g, namespace) {
		if e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// namespaceEvents are the events recorded in namespace.
func namespaceEvents(ctx context.Context, g Gomega, namespace string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	return list.Items
}

// expectNoSecretsIn scans every ConfigMap, event, and the status of every
// backend, StateHistory and StateRestore of a namespace for the given
// secret values.
func expectNoSecretsIn(ctx context.Context, namespace string, secrets []string) {
	var documents []string
	add := func(v any) {
		data, err := json.Marshal(v)
		Expect(err).NotTo(HaveOccurred())
		documents = append(documents, string(data))
	}

	configMaps := &corev1.ConfigMapList{}
	Expect(k8sClient.List(ctx, configMaps, client.InNamespace(namespace))).To(Succeed())
	add(configMaps)
	events := &eventsv1.EventList{}
	Expect(k8sClient.List(ctx, events, client.InNamespace(namespace))).To(Succeed())
	add(events)
	coreEvents := &corev1.EventList{}
	Expect(k8sClient.List(ctx, coreEvents, client.InNamespace(namespace))).To(Succeed())
	add(coreEvents)
	httpBackends := &backendsv1alpha1.HttpBackendList{}
	Expect(k8sClient.List(ctx, httpBackends, client.InNamespace(namespace))).To(Succeed())
	for _, b := range httpBackends.Items {
		add(b.Status)
	}
	cosBackends := &backendsv1alpha1.CosBackendList{}
	Expect(k8sClient.List(ctx, cosBackends, client.InNamespace(namespace))).To(Succeed())
	for _, b := range cosBackends.Items {
		add(b.Status)
	}
	histories := &backendsv1alpha1.StateHistoryList{}
	Expect(k8sClient.List(ctx, histories, client.InNamespace(namespace))).To(Succeed())
	for _, h := range histories.Items {
		add(h.Status)
	}
	restores := &backendsv1alpha1.StateRestoreList{}
	Expect(k8sClient.List(ctx, restores, client.InNamespace(namespace))).To(Succeed())
	for _, r := range restores.Items {
		add(r.Status)
	}

	Expect(configMaps.Items).NotTo(BeEmpty(), "the scan must see the rendered ConfigMaps")
	for _, doc := range documents {
		for _, secret := range secrets {
			Expect(doc).NotTo(ContainSubstring(secret))
		}
	}
}
