"""Beam's DaskRunner with the four fixes this pipeline needs (Beam 2.77).

    --runner beam_jobs.dask_runner.PersistingDaskRunner --dask_client_address tcp://HOST:PORT

1. Side inputs. The stock runner turns a side input into `list(bag)` evaluated inside every task
   that reads it, so each reader recomputes the side input's whole upstream graph. A chain of side
   inputs, like the DP k-means iterations (each step reads the previous step's centres), makes that
   exponential in the chain's length: a 600-conversation run did not finish in 15 minutes. Here a
   bag used as a side input is computed once on the cluster while the graph is built, and its
   (small: centres, sizes, counts) contents are embedded in the graph for every reader. (Persisting
   it as futures instead once gave a step the wrong side input in a full test run.)
   A bag that feeds a side input is computed as soon as its transform is built, before any
   main-input consumer is built on it: a consumer of the lazy bag would recompute its upstream graph,
   and a DP stage there (the noisy cluster sizes) would draw its noise a second time.
   Each of those computations is its own: without more, every one of them recomputed the whole graph
   upstream of it, the embedding included (the clustering points feed every k-means step, whose
   centres are side inputs). So a bag read by two or more transforms is persisted on the cluster as
   soon as it is built, and each reader reuses its partitions: the embedding runs once.
2. Outputs. The stock runner computes only the bag of the last transform it visits, assuming it is
   connected to the whole graph; in a pipeline with several sinks, the other sinks never run. Here
   every bag that no other transform consumes is computed.
3. Parallelism. The stock GroupByKey keeps its input's partition count, and the job starts from a
   `Create` of a few file ranges: one partition, so one worker ran the whole job (embedding
   included) however large the cluster. Here a GroupByKey spreads its groups over
   --dask_npartitions partitions, or twice the cluster's worker threads by default, so the stages
   after the first shuffle (the reader's own, then contribution bounding) use every worker.
4. finish_bundle. The stock runner collects a DoFn's outputs before calling finish_bundle, so what
   finish_bundle emits is lost: BatchElements' last partial batch (silently dropping conversations)
   and WriteToText's files. Here the outputs are collected after it.

Everything else (the translations of ParDo, GroupByKey, Flatten, ...) is Beam's own.
"""

from __future__ import annotations

import collections
import dataclasses

from apache_beam import pvalue
from apache_beam.pipeline import AppliedPTransform, PipelineVisitor
from apache_beam.runners.common import DoFnInvoker
from apache_beam.runners.dask import transform_evaluator
from apache_beam.runners.dask.dask_runner import DaskOptions, DaskRunner, DaskRunnerResult
from apache_beam.runners.dask.overrides import _GroupByKeyOnly, dask_overrides
from apache_beam.runners.dask.transform_evaluator import (
    TRANSLATIONS,
    DaskBagOp,
    DaskBagWindowedIterator,
    Flatten,
    GroupByKey,
    NoOp,
)
from apache_beam.transforms.sideinputs import SideInputMap
from dask import bag as db


def apply_dofn_to_bundle(items, do_fn_invoker_args, do_fn_invoker_kwargs, tagged_receivers):
    """Beam's transform_evaluator.apply_dofn_to_bundle, collecting outputs after finish_bundle."""
    invoker = DoFnInvoker.create_invoker(*do_fn_invoker_args, **do_fn_invoker_kwargs)
    invoker.invoke_setup()
    invoker.invoke_start_bundle()
    for item in items:
        invoker.invoke_process(item)
    invoker.invoke_finish_bundle()
    invoker.invoke_teardown()
    return [value.value for value in tagged_receivers.values]


class _ClosingDaskRunnerResult(DaskRunnerResult):
    """Closes the runner's dask client once the pipeline is done, so it does not linger and try to
    reconnect to a cluster that has gone away."""

    def wait_until_finish(self, duration=None) -> str:
        try:
            return super().wait_until_finish(duration)
        finally:
            self.client.close()


@dataclasses.dataclass
class _SpreadingGroupByKey(DaskBagOp):
    """Beam's GroupByKey translation, grouping into `partitions` partitions instead of its input's count."""
    partitions: int = 1

    def apply(self, input_bag: db.Bag, side_inputs=None) -> db.Bag:
        # dask's groupby gives as many partitions as its input has.
        spread = input_bag.repartition(max(input_bag.npartitions, self.partitions))
        return GroupByKey(self.applied, self.bag_kwargs).apply(spread, side_inputs)


@dataclasses.dataclass
class _PersistingBagVisitor(PipelineVisitor):
    bag_kwargs: dict
    group_partitions: int
    bags: dict = dataclasses.field(default_factory=dict)
    consumed: set = dataclasses.field(default_factory=set)
    materialised: set = dataclasses.field(default_factory=set)
    side_input_producers: set = dataclasses.field(default_factory=set)
    shared: set = dataclasses.field(default_factory=set)  # nodes that two or more transforms read

    def visit_transform(self, node: AppliedPTransform) -> None:
        if isinstance(node.transform, _GroupByKeyOnly):
            op = _SpreadingGroupByKey(node, self.bag_kwargs, partitions=self.group_partitions)
        else:
            op = TRANSLATIONS.get(node.transform.__class__, NoOp)(node, bag_kwargs=self.bag_kwargs)
        kwargs = {"input_bag": None, "side_inputs": None}
        inputs = list(node.inputs)
        if inputs:
            bag_inputs = []
            for value in inputs:
                if isinstance(value, pvalue.PBegin):
                    bag_inputs.append(None)
                if value.producer in self.bags:
                    self.consumed.add(value.producer)
                    bag_inputs.append(self.bags[value.producer])
            kwargs["input_bag"] = bag_inputs[0] if len(bag_inputs) == 1 and not isinstance(op, Flatten) else bag_inputs
        if node.side_inputs:
            side_inputs = []
            for side in node.side_inputs:
                producer = side.pvalue.producer
                self.consumed.add(producer)
                self._materialise(producer)
                side_inputs.append(SideInputMap(type(side), side._view_options(),
                                                DaskBagWindowedIterator(self.bags[producer], side._window_mapping_fn)))
            kwargs["side_inputs"] = side_inputs
        self.bags[node] = op.apply(**kwargs)
        if node in self.side_input_producers:
            # At once, before any main-input consumer is built on the lazy bag: otherwise that consumer
            # recomputes the upstream graph, and a DP stage upstream would draw its noise twice.
            self._materialise(node)
        elif node in self.shared:
            self.bags[node] = self.bags[node].persist()

    def _materialise(self, node) -> None:
        if node not in self.materialised:
            self.materialised.add(node)
            self.bags[node] = db.from_sequence(self.bags[node].compute(), npartitions=1)

    def leaves(self) -> list:
        return [bag for node, bag in self.bags.items() if node not in self.consumed]


@dataclasses.dataclass
class _Readers(PipelineVisitor):
    """Who reads each transform's output: as a side input, and in all (main and side inputs)."""
    side_input_producers: set = dataclasses.field(default_factory=set)
    readers: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def visit_transform(self, node: AppliedPTransform) -> None:
        producers = [side.pvalue.producer for side in node.side_inputs]
        self.side_input_producers.update(producers)
        producers += [value.producer for value in node.inputs if not isinstance(value, pvalue.PBegin)]
        self.readers.update(set(producers))

    @property
    def shared(self) -> set:
        return {node for node, count in self.readers.items() if count >= 2}


def _readers(pipeline) -> _Readers:
    readers = _Readers()
    pipeline.visit(readers)
    return readers


class PersistingDaskRunner(DaskRunner):
    def run_pipeline(self, pipeline, options):
        import dask
        import dask.distributed as ddist

        # ParDo.apply looks the function up in its module at graph-building time; the graph then
        # refers to this module's function, which workers import by name.
        transform_evaluator.apply_dofn_to_bundle = apply_dofn_to_bundle

        dask_options = options.view_as(DaskOptions).get_all_options(drop_default=True, current_only=True)
        bag_kwargs = DaskOptions._extract_bag_kwargs(dask_options)
        client = ddist.Client(**dask_options)
        pipeline.replace_all(dask_overrides())
        readers = _readers(pipeline)
        threads = sum(worker["nthreads"] for worker in client.scheduler_info()["workers"].values())
        visitor = _PersistingBagVisitor(bag_kwargs, bag_kwargs.get("npartitions") or 2 * max(1, threads),
                                        side_input_producers=readers.side_input_producers, shared=readers.shared)
        pipeline.visit(visitor)
        futures = client.compute(list(dask.optimize(*visitor.leaves())))
        return _ClosingDaskRunnerResult(client, futures)
