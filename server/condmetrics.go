package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var conditionErrorsDesc = prometheus.NewDesc("baton_condition_errors_total",
	"Rule conditions that failed at run time (each counted as false).", []string{"workflow", "version"}, nil)

// conditionErrors exposes the engines' counts of conditions that failed at
// run time, by workflow version; the engines keep the counts, this reads
// them when the metrics are scraped.
type conditionErrors struct{ cat *catalog }

func (c conditionErrors) Describe(ch chan<- *prometheus.Desc) { ch <- conditionErrorsDesc }

func (c conditionErrors) Collect(ch chan<- prometheus.Metric) {
	type key struct {
		name    string
		version int
	}
	sums := map[key]int64{} // two revisions of one version share its labels
	for _, f := range c.cat.byHash {
		sums[key{f.wf.Name, f.wf.Version}] += f.eng.Metrics().ConditionErrors
	}
	for k, n := range sums {
		ch <- prometheus.MustNewConstMetric(conditionErrorsDesc, prometheus.CounterValue, float64(n), k.name, strconv.Itoa(k.version))
	}
}
