package printer

import (
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// formatHPAMetrics is formatHPAMetrics in
// k8s.io/kubernetes/pkg/printers/internalversion/printers.go (v1.37.2):
// the first two metrics, current/target, and how many more. The internal
// metric types are autoscaling/v2's; a status is the spec's by index.
func formatHPAMetrics(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	const max = 2
	list := []string{}
	for i, spec := range specs {
		var status *autoscalingv2.MetricStatus
		if len(statuses) > i {
			status = &statuses[i]
		}
		list = append(list, formatHPAMetric(spec, status))
	}
	if count := len(list); count > max {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:max], ", "), count-max)
	}
	return strings.Join(list, ", ")
}

// formatHPAMetric is one metric of formatHPAMetrics; status is nil when
// the status has none at the spec's index.
func formatHPAMetric(spec autoscalingv2.MetricSpec, status *autoscalingv2.MetricStatus) string {
	switch spec.Type {
	case autoscalingv2.ExternalMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.External != nil {
			cur = &status.External.Current
		}
		return valueOrAverage(spec.External.Target, cur)
	case autoscalingv2.PodsMetricSourceType:
		current := "<unknown>"
		if status != nil && status.Pods != nil {
			current = status.Pods.Current.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s", current, spec.Pods.Target.AverageValue.String())
	case autoscalingv2.ObjectMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.Object != nil {
			cur = &status.Object.Current
		}
		return valueOrAverage(spec.Object.Target, cur)
	case autoscalingv2.ResourceMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.Resource != nil {
			cur = &status.Resource.Current
		}
		return spec.Resource.Name.String() + ": " + utilization(spec.Resource.Target, cur)
	case autoscalingv2.ContainerResourceMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.ContainerResource != nil {
			cur = &status.ContainerResource.Current
		}
		return spec.ContainerResource.Name.String() + ": " + utilization(spec.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

// valueOrAverage is an External or Object metric's current/target: by
// average value ("(avg)") when the target has one, else by value.
func valueOrAverage(target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if target.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s (avg)", current, target.AverageValue.String())
	}
	if cur != nil {
		current = cur.Value.String()
	}
	return fmt.Sprintf("%s/%s", current, target.Value.String())
}

// utilization is a Resource or ContainerResource metric's current/target:
// by average value when the target has one, else by average utilization.
func utilization(target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if target.AverageValue != nil {
		if cur != nil {
			current = cur.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s", current, target.AverageValue.String())
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
	}
	t := "<auto>"
	if target.AverageUtilization != nil {
		t = fmt.Sprintf("%d%%", *target.AverageUtilization)
	}
	return fmt.Sprintf("%s/%s", current, t)
}
