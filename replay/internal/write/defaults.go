package write

import (
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// setDefaults sets the defaults kube-apiserver v1.37.2 sets when it decodes
// a built-in workload (its SetDefaults_* functions, written here from what
// the server answers): Pods and the Pod templates of Deployments,
// ReplicaSets, StatefulSets, DaemonSets, ReplicationControllers, Jobs and
// CronJobs, and those workloads' own fields; a Secret's type and its
// stringData; an autoscaling/v2 HorizontalPodAutoscaler's minReplicas and
// metric; the group of an RBAC binding's roleRef and subjects. Other kinds are left as they are; kwrec does not default
// Services (their cluster IP is allocated, not defaulted) or Nodes.
func setDefaults(obj runtime.Object) {
	switch o := obj.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		serverTypes().Default(o)
	case *corev1.Secret:
		defaultSecret(o)
	case *autoscalingv2.HorizontalPodAutoscaler:
		defaultHPA(o)
	case *corev1.Pod:
		defaultPod(o)
	case *corev1.PodTemplate:
		defaultPodSpec(&o.Template.Spec)
	case *corev1.ReplicationController:
		defaultReplicationController(o)
	case *appsv1.Deployment:
		defaultDeployment(o)
	case *appsv1.ReplicaSet:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = ptr[int32](1)
		}
		defaultPodSpec(&o.Spec.Template.Spec)
	case *appsv1.StatefulSet:
		defaultStatefulSet(o)
	case *appsv1.DaemonSet:
		defaultDaemonSet(o)
	case *batchv1.Job:
		defaultJobSpec(&o.Spec)
	case *batchv1.CronJob:
		defaultCronJob(o)
	case *rbacv1.RoleBinding:
		defaultRBAC(&o.RoleRef, o.Subjects)
	case *rbacv1.ClusterRoleBinding:
		defaultRBAC(&o.RoleRef, o.Subjects)
	}
}

// defaultPod sets a Pod's defaults: its spec's, service links, and the
// requests its containers' limits imply.
func defaultPod(o *corev1.Pod) {
	defaultPodSpec(&o.Spec)
	if o.Spec.EnableServiceLinks == nil {
		o.Spec.EnableServiceLinks = ptr(true)
	}
	for i := range o.Spec.Containers {
		defaultResourceRequests(&o.Spec.Containers[i].Resources)
	}
}

// defaultReplicationController sets a ReplicationController's defaults;
// its selector and labels come from its template's labels.
func defaultReplicationController(o *corev1.ReplicationController) {
	if o.Spec.Replicas == nil {
		o.Spec.Replicas = ptr[int32](1)
	}
	if o.Spec.Template != nil {
		if len(o.Spec.Selector) == 0 {
			o.Spec.Selector = o.Spec.Template.Labels
		}
		if len(o.Labels) == 0 {
			o.Labels = o.Spec.Template.Labels
		}
		defaultPodSpec(&o.Spec.Template.Spec)
	}
}

// defaultDeployment sets a Deployment's defaults, its rolling update
// strategy's included.
func defaultDeployment(o *appsv1.Deployment) {
	if o.Spec.Replicas == nil {
		o.Spec.Replicas = ptr[int32](1)
	}
	s := &o.Spec.Strategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = ptr(intstr.FromString("25%"))
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = ptr(intstr.FromString("25%"))
		}
	}
	if o.Spec.RevisionHistoryLimit == nil {
		o.Spec.RevisionHistoryLimit = ptr[int32](10)
	}
	if o.Spec.ProgressDeadlineSeconds == nil {
		o.Spec.ProgressDeadlineSeconds = ptr[int32](600)
	}
	defaultPodSpec(&o.Spec.Template.Spec)
}

// defaultStatefulSet sets a StatefulSet's defaults: its pod management
// and update strategy, its PersistentVolumeClaim retention policy, its
// replicas and revision history limit.
func defaultStatefulSet(o *appsv1.StatefulSet) {
	if o.Spec.PodManagementPolicy == "" {
		o.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if o.Spec.UpdateStrategy.Type == "" {
		o.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if o.Spec.UpdateStrategy.RollingUpdate == nil {
			o.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := o.Spec.UpdateStrategy.RollingUpdate; o.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil {
		if ru.Partition == nil {
			ru.Partition = ptr[int32](0)
		}
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr(intstr.FromInt32(1))
		}
	}
	if o.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		o.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	p := o.Spec.PersistentVolumeClaimRetentionPolicy
	if p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if o.Spec.Replicas == nil {
		o.Spec.Replicas = ptr[int32](1)
	}
	if o.Spec.RevisionHistoryLimit == nil {
		o.Spec.RevisionHistoryLimit = ptr[int32](10)
	}
	defaultPodSpec(&o.Spec.Template.Spec)
}

// defaultDaemonSet sets a DaemonSet's defaults, its rolling update
// strategy's included.
func defaultDaemonSet(o *appsv1.DaemonSet) {
	s := &o.Spec.UpdateStrategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if s.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = ptr(intstr.FromInt32(1))
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = ptr(intstr.FromInt32(0))
		}
	}
	if o.Spec.RevisionHistoryLimit == nil {
		o.Spec.RevisionHistoryLimit = ptr[int32](10)
	}
	defaultPodSpec(&o.Spec.Template.Spec)
}

// defaultCronJob sets a CronJob's defaults and those of its job
// template's Pod spec.
func defaultCronJob(o *batchv1.CronJob) {
	if o.Spec.ConcurrencyPolicy == "" {
		o.Spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if o.Spec.Suspend == nil {
		o.Spec.Suspend = ptr(false)
	}
	if o.Spec.SuccessfulJobsHistoryLimit == nil {
		o.Spec.SuccessfulJobsHistoryLimit = ptr[int32](3)
	}
	if o.Spec.FailedJobsHistoryLimit == nil {
		o.Spec.FailedJobsHistoryLimit = ptr[int32](1)
	}
	defaultPodSpec(&o.Spec.JobTemplate.Spec.Template.Spec)
}

func defaultJobSpec(s *batchv1.JobSpec) {
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions, s.Parallelism = ptr[int32](1), ptr[int32](1)
	}
	if s.Parallelism == nil {
		s.Parallelism = ptr[int32](1)
	}
	if s.BackoffLimit == nil {
		s.BackoffLimit = ptr[int32](6)
	}
	if s.CompletionMode == nil {
		s.CompletionMode = ptr(batchv1.NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptr(false)
	}
	if s.PodReplacementPolicy == nil {
		s.PodReplacementPolicy = ptr(batchv1.TerminatingOrFailed)
	}
	defaultPodSpec(&s.Template.Spec)
}

// defaultPodSpec is what the server sets in every Pod spec, a Pod's or a
// template's.
func defaultPodSpec(s *corev1.PodSpec) {
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i])
	}
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i])
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
}

// pullPolicy is the default imagePullPolicy of image: Always for the
// latest tag or none, IfNotPresent for any other tag or a digest.
func pullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image[strings.LastIndexByte(image, '/')+1:]
	if _, tag, ok := strings.Cut(name, ":"); ok && tag != "latest" {
		return corev1.PullIfNotPresent
	}
	return corev1.PullAlways
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = "/"
		}
		if h.Scheme == "" {
			h.Scheme = corev1.URISchemeHTTP
		}
	}
}

func defaultVolume(v *corev1.Volume) {
	src := &v.VolumeSource
	mode := ptr(corev1.SecretVolumeSourceDefaultMode)
	switch {
	case src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil:
		src.ConfigMap.DefaultMode = mode
	case src.Secret != nil && src.Secret.DefaultMode == nil:
		src.Secret.DefaultMode = mode
	case src.Projected != nil && src.Projected.DefaultMode == nil:
		src.Projected.DefaultMode = mode
	case src.DownwardAPI != nil && src.DownwardAPI.DefaultMode == nil:
		src.DownwardAPI.DefaultMode = mode
	case *src == corev1.VolumeSource{}:
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
}

// defaultResourceRequests copies a Pod container's limits to requests it
// leaves unset.
func defaultResourceRequests(r *corev1.ResourceRequirements) {
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = q.DeepCopy()
		}
	}
}

func ptr[T any](v T) *T { return &v }

// prepareForCreate is what the server sets on a created object of a
// built-in kind beyond its defaults: the create strategy's fields and
// those of the admission plugins every kube-apiserver runs (Priority and
// DefaultTolerationSeconds for Pods). uid is the new object's uid.
func prepareForCreate(obj runtime.Object, uid string) {
	switch o := obj.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		prepareCRD(o)
	case *corev1.Pod:
		if o.Spec.Priority == nil {
			o.Spec.Priority = ptr(systemPriorities[o.Spec.PriorityClassName])
		}
		if o.Spec.PreemptionPolicy == nil {
			o.Spec.PreemptionPolicy = ptr(corev1.PreemptLowerPriority)
		}
		for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
			if !tolerates(o.Spec.Tolerations, key) {
				o.Spec.Tolerations = append(o.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
					Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr[int64](300)})
			}
		}
		o.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(&o.Spec)}
	case *batchv1.Job:
		if o.Spec.ManualSelector == nil || !*o.Spec.ManualSelector {
			l := o.Spec.Template.Labels
			if l == nil {
				l = map[string]string{}
			}
			l[batchv1.ControllerUidLabel], l[batchv1.JobNameLabel] = uid, o.Name
			l["controller-uid"], l["job-name"] = uid, o.Name
			o.Spec.Template.Labels = l
			o.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: uid}}
		}
		if len(o.Labels) == 0 {
			o.Labels = maps.Clone(o.Spec.Template.Labels)
		}
	}
}

// createdByManager is what the server sets on a created object before it
// records the fields its manager owns: the DaemonSet's template
// generation and a Job's manualSelector.
func createdByManager(obj runtime.Object) {
	switch o := obj.(type) {
	case *appsv1.DaemonSet:
		if o.Annotations == nil {
			o.Annotations = map[string]string{}
		}
		o.Annotations[appsv1.DeprecatedTemplateGeneration] = "1"
	case *batchv1.Job:
		if o.Spec.ManualSelector == nil {
			o.Spec.ManualSelector = ptr(false)
		}
	}
}

// systemPriorities are the PriorityClasses every cluster has; a Pod that
// names none gets priority 0 (no global default class is recorded).
var systemPriorities = map[string]int32{
	"system-cluster-critical": 2000000000,
	"system-node-critical":    2000001000,
}

// tolerates reports whether ts tolerate the NoExecute taint key.
func tolerates(ts []corev1.Toleration, key string) bool {
	for _, t := range ts {
		if (t.Key == key || t.Key == "" && t.Operator == corev1.TolerationOpExists) && (t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute) {
			return true
		}
	}
	return false
}

// qosClass is the Pod's quality of service class from its containers'
// CPU and memory requests and limits.
func qosClass(s *corev1.PodSpec) corev1.PodQOSClass {
	some, guaranteed := false, true
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for _, c := range cs {
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, hasReq := c.Resources.Requests[name]
				lim, hasLim := c.Resources.Limits[name]
				some = some || hasReq || hasLim
				if !hasLim || hasReq && req.Cmp(lim) != 0 {
					guaranteed = false
				}
			}
		}
	}
	switch {
	case !some:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// defaultSecret is what the server does to a Secret it decodes: its type
// defaults to Opaque, and stringData, write-only, is merged into data
// (the v1 to internal conversion), a stringData key winning.
func defaultSecret(o *corev1.Secret) {
	if o.Type == "" {
		o.Type = corev1.SecretTypeOpaque
	}
	if len(o.StringData) > 0 {
		if o.Data == nil {
			o.Data = map[string][]byte{}
		}
		for k, v := range o.StringData {
			o.Data[k] = []byte(v)
		}
	}
	o.StringData = nil
}

// defaultHPA is SetDefaults_HorizontalPodAutoscaler of autoscaling/v2: one
// replica at the least, and with no metric the CPU at 80% utilization.
func defaultHPA(o *autoscalingv2.HorizontalPodAutoscaler) {
	if o.Spec.MinReplicas == nil {
		o.Spec.MinReplicas = ptr[int32](1)
	}
	if len(o.Spec.Metrics) == 0 {
		o.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr[int32](80)}}}}
	}
}
