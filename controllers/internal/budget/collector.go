package budget

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector serves the use of budgets as metrics, read when scraped (a
// namespace that uses nothing has no series):
// infrastate_budget_used{budget,namespace} and
// infrastate_budget_limit{budget,scope} (scope "namespace" for the
// share, "total" for the total). Amounts are in bytes, or in seconds for
// Nanoseconds budgets.
type Collector struct {
	budgets []*Shares
	used    *prometheus.Desc
	limit   *prometheus.Desc
}

// NewCollector returns the Collector of budgets.
func NewCollector(budgets ...*Shares) *Collector {
	return &Collector{
		budgets: budgets,
		used: prometheus.NewDesc("infrastate_budget_used",
			"What a namespace uses of a budget of the manager: bytes of read memory held (read_memory), bytes stored in the API "+
				"server by the operator's writes (api_storage), seconds of key derivation CPU in the current window (key_derivation_cpu).",
			[]string{"budget", "namespace"}, nil),
		limit: prometheus.NewDesc("infrastate_budget_limit",
			"A budget's limit: each namespace's share (scope namespace) and the total over all namespaces (scope total).",
			[]string{"budget", "scope"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.used
	ch <- c.limit
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.budgets {
		cfg := b.Config()
		name := MetricName(cfg.Name)
		for ns, used := range b.Usage() {
			ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, cfg.Unit.value(used), name, ns)
		}
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, cfg.Unit.value(cfg.PerNamespace), name, "namespace")
		if cfg.Total > 0 {
			ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, cfg.Unit.value(cfg.Total), name, "total")
		}
	}
}

// MetricName is the budget label of a budget named name: its words in
// lower case joined by underscores ("API storage" is api_storage).
func MetricName(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), " ", "_")
}

// value is n as the metrics show it: bytes, or seconds.
func (u Unit) value(n int64) float64 {
	if u == Nanoseconds {
		return float64(n) / 1e9
	}
	return float64(n)
}
