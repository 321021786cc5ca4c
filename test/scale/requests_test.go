package main

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassifyRequest(t *testing.T) {
	type want struct {
		Verb, Resource, Subresource string
		OK                          bool
	}
	cases := map[string]struct {
		method, url, contentType string
		want                     want
	}{
		"get of a namespaced core object": {
			method: "GET", url: "/api/v1/namespaces/ns/secrets/s",
			want: want{"GET", "secrets", "", true},
		},
		"list in a namespace": {
			method: "GET", url: "/api/v1/namespaces/ns/configmaps?labelSelector=a%3Db",
			want: want{"LIST", "configmaps", "", true},
		},
		"list across namespaces": {
			method: "GET", url: "/apis/backends.infrastate.io/v1alpha1/httpbackends?limit=500",
			want: want{"LIST", "httpbackends", "", true},
		},
		"watch": {
			method: "GET", url: "/apis/backends.infrastate.io/v1alpha1/httpbackends?watch=true&resourceVersion=5",
			want: want{"WATCH", "httpbackends", "", true},
		},
		"create": {
			method: "POST", url: "/apis/backends.infrastate.io/v1alpha1/namespaces/ns/httpbackends",
			want: want{"POST", "httpbackends", "", true},
		},
		"status patch": {
			method: "PATCH", url: "/apis/backends.infrastate.io/v1alpha1/namespaces/ns/httpbackends/b/status",
			contentType: "application/merge-patch+json",
			want:        want{"PATCH", "httpbackends", "status", true},
		},
		"server-side apply": {
			method: "PATCH", url: "/api/v1/namespaces/ns/configmaps/c", contentType: "application/apply-patch+yaml",
			want: want{"APPLY", "configmaps", "", true},
		},
		"delete": {
			method: "DELETE", url: "/api/v1/namespaces/ns/secrets/s",
			want: want{"DELETE", "secrets", "", true},
		},
		"delete collection": {
			method: "DELETE", url: "/api/v1/namespaces/ns/secrets",
			want: want{"DELETECOLLECTION", "secrets", "", true},
		},
		"create a namespace": {
			method: "POST", url: "/api/v1/namespaces",
			want: want{"POST", "namespaces", "", true},
		},
		"get a namespace": {
			method: "GET", url: "/api/v1/namespaces/ns",
			want: want{"GET", "namespaces", "", true},
		},
		"a namespace's status": {
			method: "PUT", url: "/api/v1/namespaces/ns/status",
			want: want{"PUT", "namespaces", "status", true},
		},
		"metrics":              {method: "GET", url: "/metrics"},
		"discovery of a group": {method: "GET", url: "/apis/backends.infrastate.io"},
		"version":              {method: "GET", url: "/version"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			var got want
			got.Verb, got.Resource, got.Subresource, got.OK = classifyRequest(tc.method, u, tc.contentType)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("classifyRequest(%s %s) mismatch (-want +got):\n%s", tc.method, tc.url, diff)
			}
		})
	}
}

func TestRequestCountsMinus(t *testing.T) {
	post := requestKey{Verb: "POST", Resource: "configmaps", Code: "201"}
	get := requestKey{Verb: "GET", Resource: "secrets", Code: "200"}
	list := requestKey{Verb: "LIST", Resource: "secrets", Code: "200"}
	cases := map[string]struct {
		after, before requestCounts
		want          requestCounts
	}{
		"difference per key": {
			after:  requestCounts{post: 10, get: 30},
			before: requestCounts{post: 4, get: 30},
			want:   requestCounts{post: 6},
		},
		"a key missing on one side never goes negative": {
			after:  requestCounts{post: 1},
			before: requestCounts{post: 2, list: 5},
			want:   requestCounts{},
		},
		"nothing before": {
			after: requestCounts{list: 3},
			want:  requestCounts{list: 3},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.after.minus(tc.before)); diff != "" {
				t.Errorf("minus mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatRequests(t *testing.T) {
	cases := map[string]struct {
		counts requestCounts
		want   string
	}{
		"none": {counts: requestCounts{}, want: "none"},
		"writes before reads, codes outside 2xx in parentheses": {
			counts: requestCounts{
				{Verb: "GET", Resource: "secrets", Code: "200"}:                               3000,
				{Verb: "GET", Resource: "secrets", Code: "404"}:                               2,
				{Verb: "POST", Resource: "configmaps", Code: "201"}:                           1000,
				{Verb: "PATCH", Resource: "httpbackends", Subresource: "status", Code: "200"}: 1000,
				{Verb: "PATCH", Resource: "httpbackends", Subresource: "status", Code: "409"}: 20,
				{Verb: "LIST", Resource: "httpbackends", Code: "200"}:                         1,
				{Verb: "POST", Resource: "secrets", Code: "201"}:                              1000,
			},
			want: "POST configmaps 1000, POST secrets 1000, PATCH httpbackends/status 1020(409:20), GET secrets 3002(404:2), LIST httpbackends 1",
		},
		"watches and other resources are left out": {
			counts: requestCounts{
				{Verb: "WATCH", Resource: "secrets", Code: "200"}: 3,
				{Verb: "PUT", Resource: "leases", Code: "200"}:    6,
				{Verb: "POST", Resource: "events", Code: "201"}:   2,
			},
			want: "POST events 2",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, formatRequests(tc.counts)); diff != "" {
				t.Errorf("formatRequests mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestTotals(t *testing.T) {
	counts := requestCounts{
		{Verb: "GET", Resource: "secrets", Code: "200"}:                               30,
		{Verb: "LIST", Resource: "configmaps", Code: "200"}:                           2,
		{Verb: "WATCH", Resource: "configmaps", Code: "200"}:                          2,
		{Verb: "PATCH", Resource: "httpbackends", Subresource: "status", Code: "409"}: 1,
		{Verb: "POST", Resource: "events", Code: "201"}:                               4,
		{Verb: "PUT", Resource: "leases", Code: "200"}:                                9,
	}
	type totals struct{ Writes, Reads int64 }
	var got totals
	got.Writes, got.Reads = requestTotals(counts)
	if diff := cmp.Diff(totals{Writes: 5, Reads: 32}, got); diff != "" {
		t.Errorf("requestTotals mismatch (-want +got):\n%s", diff)
	}
}
