"""The neuron backend under PyTorch's own multi-process test harness (the
classes the wheel ships in torch.testing._internal): DTensorTestBase and
MultiProcessTestCase spawn the ranks, init_process_group through a FileStore,
as PyTorch's distributed tests do. PyTorch's test files themselves are not in
the wheel; these are tests of ours written on the harness.

Adapted: DTensorTestBase's backend property is "cpu:gloo,neuron:neuron" (the
harness refuses a backend outside its list, which names that form for a
PrivateUse1 device)."""

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor
from torch.testing._internal.common_distributed import MultiProcessTestCase
from torch.testing._internal.common_utils import run_tests
from torch.testing._internal.distributed._tensor.common_dtensor import DTensorTestBase, with_comms

import torch_neuronx  # noqa: F401


class NeuronDTensorHarnessTest(DTensorTestBase):
    @property
    def world_size(self):
        return 2

    @property
    def backend(self):
        return "cpu:gloo,neuron:neuron"

    @with_comms
    def test_the_harness_picks_the_neuron_device(self):
        self.assertEqual(self.device_type, "neuron")
        mesh = self.build_device_mesh()
        self.assertEqual(mesh.device_type, "neuron")

    @with_comms
    def test_distribute_redistribute_and_full_tensor(self):
        mesh = self.build_device_mesh()
        full = torch.arange(24.0).reshape(4, 6)
        for placement in (Shard(0), Shard(1), Replicate()):
            sharded = distribute_tensor(full, mesh, [placement])
            self.assertEqual(sharded.to_local().device.type, "neuron")
            self.assertEqual(sharded.full_tensor().cpu(), full)
            self.assertEqual(sharded.redistribute(mesh, [Replicate()]).to_local().cpu(), full)
        row = distribute_tensor(full, mesh, [Shard(0)])
        column = row.redistribute(mesh, [Shard(1)])
        self.assertEqual(column.to_local().cpu(), full.chunk(2, dim=1)[self.rank])

    @with_comms
    def test_from_local_and_sharded_matmul_backward(self):
        mesh = self.build_device_mesh()
        torch.manual_seed(0)
        a = torch.randn(4, 8, requires_grad=True)
        b = torch.randn(8, 3, requires_grad=True)
        local = a.detach().chunk(2)[self.rank].to("neuron").requires_grad_()
        da = DTensor.from_local(local, mesh, [Shard(0)])
        db = distribute_tensor(b.detach(), mesh, [Replicate()]).requires_grad_()
        out = da @ db
        out.sum().backward()
        (a @ b).sum().backward()
        self.assertEqual(out.full_tensor().cpu(), (a @ b).detach(), atol=1e-5, rtol=1e-5)
        self.assertEqual(local.grad.cpu(), a.grad.chunk(2)[self.rank], atol=1e-5, rtol=1e-5)
        self.assertEqual(db.grad.full_tensor().cpu(), b.grad, atol=1e-5, rtol=1e-5)


class NeuronProcessGroupHarnessTest(MultiProcessTestCase):
    @property
    def world_size(self):
        return 2

    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def test_collectives_through_a_file_store(self):
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("neuron", store=store, rank=self.rank,
                                world_size=self.world_size)
        tensor = torch.full((3,), float(self.rank + 1), device="neuron")
        dist.all_reduce(tensor)
        self.assertEqual(tensor.cpu(), torch.full((3,), 3.0))
        gathered = torch.empty(6, device="neuron")
        dist.all_gather_into_tensor(gathered, torch.full((3,), float(self.rank), device="neuron"))
        self.assertEqual(gathered.cpu(), torch.tensor([0.0, 0, 0, 1, 1, 1]))
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    run_tests()
