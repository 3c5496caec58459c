"""Questions on training: the learning rate during warm-up (`Recipe.lr_at`), the batch an
update sees with gradient accumulation, and the target label smoothing gives the right token.
They read the Train page's recipe and task (`QuestionContext.recipe`, ``task``) or their
defaults."""

from __future__ import annotations

from ..i18n import tr
from .answers import Mark, NumberAnswer, Question, Tolerance, format_number
from .context import QuestionContext
from .registry import Param, template

__all__ = ["effective_batch", "label_smoothing_target", "smoothed_target", "warmup_lr"]


@template(
    concept="training",
    kind="number",
    page="train",
    summary="the learning rate of update s under the recipe's warm-up schedule",
    params=(Param("step", "int", "the update (1 is the first)", 10, low=1, high=1_000_000),),
)
def warmup_lr(ctx: QuestionContext, *, step: int = 10) -> Question:
    r = ctx.training
    lr = r.lr_at(step)
    if step <= r.warmup:
        how = tr(
            "During warm-up the rate grows in a straight line from 0 to the peak {peak} at step {w}: at "
            "step {s} it is {peak} × {s}/{w} = {lr}.",
            peak=format_number(r.lr),
            w=r.warmup,
            s=step,
            lr=format_number(lr),
        )
    elif r.schedule == "noam":
        how = tr(
            "Warm-up ended at step {w} at the peak {peak}; after it the rate decays as 1/√step: "
            "{peak} × √({w}/{s}) = {lr}.",
            peak=format_number(r.lr),
            w=r.warmup,
            s=step,
            lr=format_number(lr),
        )
    else:
        how = tr(
            "Warm-up ended at step {w}; the constant schedule then holds the peak, {lr}.",
            w=r.warmup,
            lr=format_number(lr),
        )
    return Question(
        template="warmup_lr",
        concept="training",
        page="train",
        prompt=tr(
            "The recipe warms up for {w} steps to a peak learning rate of {peak} (schedule: {schedule}). "
            "What is the learning rate at step {s}?",
            w=r.warmup,
            peak=format_number(r.lr),
            schedule=tr("1/√step after warm-up") if r.schedule == "noam" else tr("constant after warm-up"),
            s=step,
        ),
        answer=NumberAnswer(lr, Tolerance(rel=0.05)),
        explanation=how,
        hint=tr("Is step {s} before or after the end of the warm-up, step {w}?", s=step, w=r.warmup),
        mark=Mark("schedule", cols=(step,), part="warmup"),
        params={"step": step},
    )


@template(
    concept="training",
    kind="number",
    page="train",
    summary="the sequences one update sees: batch × accumulation",
)
def effective_batch(ctx: QuestionContext) -> Question:
    r = ctx.training
    total = r.batch * r.accum
    return Question(
        template="effective_batch",
        concept="training",
        page="train",
        prompt=tr(
            "The recipe uses micro-batches of {b} sequences and accumulates gradients over {a} of them. "
            "How many sequences does one update see?",
            b=r.batch,
            a=r.accum,
        ),
        answer=NumberAnswer(float(total), Tolerance(), unit="count"),
        explanation=tr(
            "The gradients of {a} micro-batches of {b} are summed before the optimizer steps: one update sees "
            "{b} × {a} = {total} sequences, with the memory of {b}.",
            a=r.accum,
            b=r.batch,
            total=format_number(total),
        ),
        hint=tr("Nothing is updated until all the accumulated micro-batches are in."),
        mark=Mark("schedule", part="accum"),
    )


def smoothed_target(epsilon: float, classes: int) -> float:
    r"""The probability label smoothing asks of the right class (`label_smoothed_loss`'s q_y).

    .. math::
        q_y = (1 - \varepsilon) + \frac{\varepsilon}{V}
    """
    return (1.0 - epsilon) + epsilon / classes


@template(
    concept="training",
    kind="number",
    page="train",
    summary="the target probability of the right token under label smoothing ε over V classes",
    params=(
        Param("epsilon", "float", "ε (default: the recipe's label smoothing)", None, low=0.0, high=0.99),
    ),
)
def label_smoothing_target(ctx: QuestionContext, *, epsilon: float | None = None) -> Question:
    eps = ctx.training.label_smoothing if epsilon is None else float(epsilon)
    classes = ctx.task_spec.n_ids
    target = smoothed_target(eps, classes)
    return Question(
        template="label_smoothing_target",
        concept="training",
        page="train",
        prompt=tr(
            "With label smoothing ε = {eps} over the task's {v} output classes, what probability does the "
            "target give the right token?",
            eps=format_number(eps),
            v=classes,
        ),
        answer=NumberAnswer(target, Tolerance(abs=0.005), digits=3),
        explanation=tr(
            "Smoothing keeps 1 − ε = {keep} for the right token and spreads ε = {eps} evenly over all {v} "
            "classes: {keep} + {eps}/{v} = {target}; every wrong class gets {other}.",
            keep=format_number(1 - eps),
            eps=format_number(eps),
            v=classes,
            target=format_number(target, 3),
            other=format_number(eps / classes, 4),
        ),
        hint=tr("The right class keeps 1 − ε and also gets its share of ε."),
        mark=Mark("schedule", part="label_smoothing"),
        params={"epsilon": eps},
    )
