package printer

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The printers of core and networking kinds, ported from
// k8s.io/kubernetes/pkg/printers/internalversion/printers.go (v1.37.2).
// Each function is named after the server's and prints what the server
// prints with GenerateOptions{Wide: true}, as its table convertor does.

// printConfigMap is printConfigMap.
func printConfigMap(obj *corev1.ConfigMap, now time.Time) []any {
	return []any{obj.Name, int64(len(obj.Data) + len(obj.BinaryData)), since(obj.CreationTimestamp, now)}
}

// printSecret is printSecret. The server merges stringData into data
// when it stores a Secret, so data alone is counted.
func printSecret(obj *corev1.Secret, now time.Time) []any {
	return []any{obj.Name, string(obj.Type), int64(len(obj.Data)), since(obj.CreationTimestamp, now)}
}

// printServiceAccount is printServiceAccount.
func printServiceAccount(obj *corev1.ServiceAccount, now time.Time) []any {
	return []any{obj.Name, since(obj.CreationTimestamp, now)}
}

// printNamespace is printNamespace.
func printNamespace(obj *corev1.Namespace, now time.Time) []any {
	return []any{obj.Name, string(obj.Status.Phase), since(obj.CreationTimestamp, now)}
}

// printService is printService.
func printService(obj *corev1.Service, now time.Time) []any {
	internalIP := "<none>"
	if len(obj.Spec.ClusterIPs) > 0 {
		internalIP = obj.Spec.ClusterIPs[0]
	}
	svcPorts := makePortString(obj.Spec.Ports)
	if len(svcPorts) == 0 {
		svcPorts = "<none>"
	}
	return []any{obj.Name, string(obj.Spec.Type), internalIP, getServiceExternalIP(obj), svcPorts,
		since(obj.CreationTimestamp, now), labels.FormatLabels(obj.Spec.Selector)}
}

// getServiceExternalIP is getServiceExternalIP, wide.
func getServiceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(svc.Spec.ExternalIPs) > 0 {
			return strings.Join(svc.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		var lb []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			lb = append(lb, cmpOr(in.IP, in.Hostname))
		}
		lbIps := sortedSet(lb)
		if len(svc.Spec.ExternalIPs) > 0 {
			results := []string{}
			if len(lbIps) > 0 {
				results = append(results, strings.Split(lbIps, ",")...)
			}
			results = append(results, svc.Spec.ExternalIPs...)
			return strings.Join(results, ",")
		}
		if len(lbIps) > 0 {
			return lbIps
		}
		return "<pending>"
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

// sortedSet is the comma-separated sorted set of the non-empty strings of
// ss: loadBalancerStatusStringer's and
// ingressLoadBalancerStatusStringer's (wide, so never clipped).
func sortedSet(ss []string) string {
	ss = slices.DeleteFunc(slices.Clone(ss), func(s string) bool { return s == "" })
	slices.Sort(ss)
	return strings.Join(slices.Compact(ss), ",")
}

// cmpOr is the first of a and b that is not empty.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// makePortString is makePortString.
func makePortString(ports []corev1.ServicePort) string {
	pieces := make([]string, len(ports))
	for i, port := range ports {
		pieces[i] = fmt.Sprintf("%d/%s", port.Port, port.Protocol)
		if port.NodePort > 0 {
			pieces[i] = fmt.Sprintf("%d:%d/%s", port.Port, port.NodePort, port.Protocol)
		}
	}
	return strings.Join(pieces, ",")
}

// printEndpoints is printEndpoints.
//
//lint:ignore SA1019 v1 Endpoints are deprecated for clients; kube-apiserver still serves and prints them
func printEndpoints(obj *corev1.Endpoints, now time.Time) []any {
	return []any{obj.Name, formatEndpoints(obj), since(obj.CreationTimestamp, now)}
}

// formatEndpoints is formatEndpoints with ports=nil (all ports): the
// first three addresses (with their ports), and how many more.
//
//lint:ignore SA1019 v1 Endpoints are deprecated for clients; kube-apiserver still serves and prints them
func formatEndpoints(endpoints *corev1.Endpoints) string {
	if len(endpoints.Subsets) == 0 {
		return "<none>"
	}
	const max = 3
	list := []string{}
	more := false
	count := 0
	add := func(s string) bool {
		if len(list) == max {
			more = true
			return false
		}
		list = append(list, s)
		return true
	}
	for _, ss := range endpoints.Subsets {
		if len(ss.Ports) == 0 {
			// It's possible to have headless services with no ports.
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if !add(a.IP) {
					break
				}
			}
			continue
		}
		for _, port := range ss.Ports {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if !add(net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port)))) {
					break
				}
			}
		}
	}
	ret := strings.Join(list, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", ret, count-max)
	}
	return ret
}

// printEndpointSlice is printEndpointSlice.
func printEndpointSlice(obj *discoveryv1.EndpointSlice, now time.Time) []any {
	return []any{obj.Name, string(obj.AddressType), formatDiscoveryPorts(obj.Ports),
		formatDiscoveryEndpoints(obj.Endpoints), since(obj.CreationTimestamp, now)}
}

// formatDiscoveryPorts is formatDiscoveryPorts.
func formatDiscoveryPorts(ports []discoveryv1.EndpointPort) string {
	const max = 3
	list := []string{}
	for _, port := range ports {
		if len(list) < max {
			portNum := "*"
			if port.Port != nil {
				portNum = strconv.Itoa(int(*port.Port))
			} else if port.Name != nil {
				portNum = *port.Name
			}
			list = append(list, portNum)
		}
	}
	return listWithMoreString(list, len(ports) > max, len(ports), max)
}

// formatDiscoveryEndpoints is formatDiscoveryEndpoints.
func formatDiscoveryEndpoints(endpoints []discoveryv1.Endpoint) string {
	const max = 3
	list := []string{}
	count := 0
	for _, endpoint := range endpoints {
		for _, address := range endpoint.Addresses {
			if len(list) < max {
				list = append(list, address)
			}
			count++
		}
	}
	return listWithMoreString(list, count > max, count, max)
}

// listWithMoreString is listWithMoreString.
func listWithMoreString(list []string, more bool, count, max int) string {
	ret := strings.Join(list, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", ret, count-max)
	}
	if ret == "" {
		ret = "<unset>"
	}
	return ret
}

// printIngress is printIngress.
func printIngress(obj *networkingv1.Ingress, now time.Time) []any {
	className := "<none>"
	if obj.Spec.IngressClassName != nil {
		className = *obj.Spec.IngressClassName
	}
	var lb []string
	for _, in := range obj.Status.LoadBalancer.Ingress {
		lb = append(lb, cmpOr(in.IP, in.Hostname))
	}
	ports := "80"
	if len(obj.Spec.TLS) != 0 {
		ports = "80, 443"
	}
	return []any{obj.Name, className, formatHosts(obj.Spec.Rules), sortedSet(lb), ports, since(obj.CreationTimestamp, now)}
}

// formatHosts is formatHosts: the first three rules' hosts, and how many
// rules more.
func formatHosts(rules []networkingv1.IngressRule) string {
	const max = 3
	list := []string{}
	more := false
	for _, rule := range rules {
		if len(list) == max {
			more = true
		}
		if !more && len(rule.Host) != 0 {
			list = append(list, rule.Host)
		}
	}
	if len(list) == 0 {
		return "*"
	}
	ret := strings.Join(list, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", ret, len(rules)-max)
	}
	return ret
}
