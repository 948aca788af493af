"""The Kubernetes manifests of deploy/k8s: well-formed objects of the kinds
they claim, the plugin and exporter pointed at the daemon's socket with
flags their binaries have, and examples that ask for the resource the plugin
advertises. (No cluster here; kubectl could not check the CRDs anyway.)"""

import pathlib

import pytest

yaml = pytest.importorskip("yaml")

ROOT = pathlib.Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
RESOURCE = "aws.amazon.com/neuroncore"
DEVICE_RESOURCE = "aws.amazon.com/neuron"
SOCKET = "unix:/run/neuron-rtd/neuron-rtd.sock"


def documents(path):
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def pod_spec(document):
    kind = document["kind"]
    if kind in ("DaemonSet", "Job"):
        return document["spec"]["template"]["spec"]
    raise AssertionError(f"no pod template in {kind}")


def source_flags(relative):
    """The long flags a binary's main.cc declares."""
    text = (ROOT / relative).read_text()
    return {part.split('"')[0] for part in text.split('"--')[1:]}


def test_every_manifest_is_a_named_kubernetes_object():
    paths = sorted(K8S.rglob("*.yaml"))
    assert len(paths) == 4
    for path in paths:
        for document in documents(path):
            assert {"apiVersion", "kind", "metadata"} <= document.keys(), path
            assert document["metadata"]["name"], path


def test_the_device_plugin_mounts_the_kubelet_and_daemon_directories():
    (daemonset,) = documents(K8S / "neuron-rtd-device-plugin.yaml")
    assert daemonset["kind"] == "DaemonSet"
    spec = pod_spec(daemonset)
    (container,) = spec["containers"]
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    assert {"/var/lib/kubelet/device-plugins", "/var/lib/kubelet/pod-resources",
            "/run/neuron-rtd"} <= mounts
    host_paths = {volume["hostPath"]["path"] for volume in spec["volumes"]}
    assert mounts == host_paths
    flags = {arg.split("=")[0][2:] for arg in container["args"]}
    assert flags <= source_flags("client/device_plugin/main.cc")
    assert f"--address={SOCKET}" in container["args"]
    assert f"--resource-name={RESOURCE}" in container["args"]
    assert f"--device-resource-name={DEVICE_RESOURCE}" in container["args"]
    labels = daemonset["spec"]["selector"]["matchLabels"]
    assert labels.items() <= daemonset["spec"]["template"]["metadata"]["labels"].items()


def test_the_exporter_serves_the_port_its_pod_monitor_scrapes():
    daemonset, monitor = documents(K8S / "neuron-rtd-exporter.yaml")
    assert (daemonset["kind"], monitor["kind"]) == ("DaemonSet", "PodMonitor")
    (container,) = pod_spec(daemonset)["containers"]
    flags = {arg.split("=")[0][2:] for arg in container["args"]}
    assert flags <= source_flags("client/exporter/main.cc")
    assert f"--address={SOCKET}" in container["args"]
    # Per-core series carry the pod: the kubelet's pod resources are mounted.
    pod_resources = "--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock"
    assert pod_resources in container["args"]
    # ... by the resources the device plugin advertises.
    assert f"--resource-name={RESOURCE}" in container["args"]
    assert f"--device-resource-name={DEVICE_RESOURCE}" in container["args"]
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    assert "/var/lib/kubelet/pod-resources" in mounts
    (port,) = container["ports"]
    assert "--listen=:%d" % port["containerPort"] in container["args"]
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == port["name"] and endpoint["path"] == "/metrics"
    assert monitor["spec"]["selector"]["matchLabels"] == daemonset["spec"]["selector"]["matchLabels"]


def test_the_examples_ask_for_neuroncores_and_start_a_process_per_core():
    (job,) = documents(K8S / "examples" / "pytorchjob.yaml")
    assert job["kind"] == "PyTorchJob"
    replicas = job["spec"]["pytorchReplicaSpecs"]
    assert set(replicas) == {"Master", "Worker"}
    containers = [c for spec in replicas.values() for c in spec["template"]["spec"]["containers"]]
    service, indexed = documents(K8S / "examples" / "torchrun-job.yaml")
    assert (service["kind"], indexed["kind"]) == ("Service", "Job")
    assert service["spec"]["clusterIP"] == "None"
    assert indexed["spec"]["completionMode"] == "Indexed"
    containers += pod_spec(indexed)["containers"]
    for container in containers:
        assert RESOURCE in container["resources"]["limits"]
        assert "--nproc-per-node=auto" in container["command"]
