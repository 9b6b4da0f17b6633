"""How a file spells BatchNorm (project mode's summaries and batchnorm-unsynced): the classes,
a class named as a layer type to build later, a module-level table of layer classes, a layer built
only under a parameter that defaults to off. Syntax only, no project facts."""

from __future__ import annotations

import ast
import re

from ddp_doctor.lint.context import (
    FileContext,
    dotted,
    init_of,
    keyword,
    param_defaults,
    parameter_names,
    positional_params,
)
from ddp_doctor.lint.flags import UNKNOWN, flag_test
from ddp_doctor.lint.idioms import BATCHNORM_ARCH, MODEL_FACTORIES

# ``inplace_abn``'s ``InPlaceABN``/``ABN`` (TResNet) are BatchNorm fused with an activation, with each GPU's
# own batch statistics (its ``InPlaceABNSync`` is the synchronised one). Sparse/point-cloud and graph
# libraries' BatchNorm layers wrap (or subclass) torch's, with each rank's statistics too:
# MinkowskiEngine's ``MinkowskiBatchNorm`` (its ``MinkowskiSyncBatchNorm`` syncs), torchsparse's and
# torch_geometric's ``BatchNorm``; ``convert_sync_batchnorm`` converts the torch layer inside.
LIBRARY_LAYER_BN = (
    r"|^MinkowskiEngine(\.\w+)*\.MinkowskiBatchNorm$|^(torchsparse|torch_geometric)\.nn(\.\w+)*\.BatchNorm$"
)
BATCHNORM = re.compile(
    r"^torch\.nn\.(Lazy)?BatchNorm[123]d$|^inplace_abn(\.\w+)*\.(InPlaceABN|ABN)$" + LIBRARY_LAYER_BN
)
# A base class that makes a project class a BatchNorm layer itself (CLIP-Driven-Universal-Model's
# ``ContBatchNorm3d(nn.modules.batchnorm._BatchNorm)``); SyncBatchNorm re-implementations by name aside.
BATCHNORM_BASE = re.compile(
    r"^torch\.nn\.(modules\.batchnorm\._BatchNorm|(Lazy)?BatchNorm[123]d)$|^inplace_abn(\.\w+)*\.(InPlaceABN|ABN)$"
    + LIBRARY_LAYER_BN
)
# Model constructors of libraries whose default models hold BatchNorm (torchvision's classification
# models first).
LIBRARY_BN = re.compile(
    r"^torchvision\.models\.(resnet|resnext|wide_resnet|densenet|mobilenet|efficientnet|"
    r"vgg\d+_bn|regnet|inception_v3|googlenet|shufflenet|mnasnet)\w*$"
    # torchvision's segmentation models keep BatchNorm in their backbones and heads (its detection
    # models freeze theirs: ``FrozenBatchNorm2d``, not here)
    r"|^torchvision\.models\.segmentation\.(deeplabv3|fcn|lraspp)_\w+$"
    # its video ResNets (BatchNorm3d) and S3D
    r"|^torchvision\.models\.video\.(r3d_18|mc3_18|r2plus1d_18|s3d)$"
    # other model libraries whose default models are BatchNorm networks
    r"|^efficientnet_pytorch(\.model)?\.EfficientNet(\.from_pretrained|\.from_name)?$"
    r"|^segmentation_models_pytorch\.(Unet|UnetPlusPlus|FPN|PSPNet|DeepLabV3|DeepLabV3Plus|Linknet|PAN|MAnet)$"
    r"|^pretrainedmodels(\.models)?\.(resnet|resnext|se_resnet|se_resnext|senet|densenet|inception|"
    r"xception|bninception|nasnet|pnasnet|dpn|polynet|vgg\d+_bn)\w*$"
    r"|^monai\.networks\.nets\.(DenseNet\d*|densenet\d+|ResNet|resnet\d+|SEResNet\d+|SEResNext\d+|SENet\d*|"
    r"seresnet\d+|EfficientNetBN)$"
    r"|^resnest\.torch\.resnest\d+$"
)
# torchvision's model and block classes, whose default ``norm_layer`` is BatchNorm: built directly
# (``ResNet(BasicBlock, [2, 2, 2, 2])``) or subclassed by a project model (YZM's ``class
# NonFcResNet(models.ResNet)``, which builds its base's layers through ``super().__init__``).
TORCHVISION_BN_CLASS = re.compile(
    r"^torchvision\.models\.(\w+\.)?(ResNet|BasicBlock|Bottleneck|DenseNet|MobileNetV2|MobileNetV3|"
    r"Inception3|GoogLeNet|ShuffleNetV2|MNASNet|RegNet|EfficientNet)$"
)


# Conformer encoders whose convolution module holds BatchNorm1d by default (lucidrains' ``conformer``
# package, torchaudio's).
CONFORMER = re.compile(
    r"^conformer(\.conformer)?\.(Conformer|ConformerBlock|ConformerConvModule)$|^torchaudio\.models\.Conformer$"
)


# Calls that inspect a class rather than build it: ``isinstance(m, nn.BatchNorm2d)``.
INSPECTS = frozenset({"isinstance", "issubclass", "type", "setattr", "getattr", "hasattr"})
# Calls that only re-arrange what a loop iterates: the classes in ``for a, b in zip([nn.BatchNorm1d,
# nn.BatchNorm2d], [SyncBN1d, SyncBN2d])`` (a BatchNorm-to-sync-BatchNorm converter, StudioGAN's
# ``convert_model``) are iterated, as in ``for clz in (nn.Linear, nn.BatchNorm2d)``.
ITERATION = frozenset({"zip", "enumerate", "reversed", "sorted", "list", "tuple", "chain", "product"})


def batchnorm_subclass(ctx: FileContext, cls: ast.ClassDef) -> bool:
    """The class is a BatchNorm layer with each rank's own statistics: a subclass of torch's
    BatchNorm (CLIP-Driven-Universal-Model's ``ContBatchNorm3d(_BatchNorm)``), not a SyncBatchNorm
    re-implementation named so, unless that one syncs only across ``DataParallel`` replicas."""
    if not any(BATCHNORM_BASE.match(ctx.qualname(b) or "") for b in cls.bases):
        return False
    return "sync" not in cls.name.lower() or replica_only_sync(cls)


def replica_only_sync(cls: ast.ClassDef) -> bool:
    """A synchronised BatchNorm that gathers statistics only through ``DataParallel`` replication:
    the vendored Synchronized-BatchNorm-PyTorch package (``_SynchronizedBatchNorm``, used with
    ``DataParallelWithCallback`` / ``patch_replication_callback`` in SPADE, first-order-model and
    their descendants) defines the replica hook ``__data_parallel_replicate__`` and, when no replica
    called it (``if not (self._is_parallel and self.training)``), runs plain ``F.batch_norm``. Under
    DDP each process holds one module and no replica: per-rank BatchNorm. A class that also talks to
    ``torch.distributed`` (an ``all_reduce``) syncs across processes."""
    hooks = any(
        isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "__data_parallel_replicate__"
        for f in cls.body
    )
    collective = any(
        isinstance(n, ast.Attribute) and n.attr in ("all_reduce", "all_gather", "distributed")
        for n in ast.walk(cls)
    )
    return hooks and not collective


def names_syncbn(node: ast.Name | ast.Attribute) -> bool:
    """``nn.SyncBatchNorm``, ``encoder.SparseSyncBatchNorm2d``: a SyncBatchNorm class by its name."""
    return "SyncBatchNorm" in (node.id if isinstance(node, ast.Name) else node.attr)


def off_by_default(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` runs only when a parameter of its function that defaults to False/None is truthy:
    ``SeqBN(ninp) if input_normalization else None`` or under ``if input_normalization:``."""
    return off_switch(ctx, node) is not None


def off_switch(ctx: FileContext, node: ast.AST) -> str | None:
    """The parameter of ``node``'s function, defaulting to False/None, that ``node`` runs only
    under (``if norm: layers.append(nn.BatchNorm2d(c))`` with ``norm=False``); None otherwise."""
    fn = ctx.enclosing_function(node)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    off = {
        k for k, d in param_defaults(fn).items() if isinstance(d, ast.Constant) and d.value in (False, None)
    }
    child, cur = node, ctx.parents.get(node)
    while cur is not None and cur is not fn:
        if isinstance(cur, (ast.IfExp, ast.If)) and child in (
            [cur.body] if isinstance(cur, ast.IfExp) else cur.body
        ):
            name = _switch_name(cur.test)
            if name in off:
                return name
        child, cur = cur, ctx.parents.get(cur)
    return None


def _switch_name(test: ast.expr) -> str | None:
    """The parameter a test turns on: ``if norm:``, also spelled ``if norm == True:`` / ``if norm is
    True:`` (Enigmatisms NeRF's ``makeMLP(..., batch_norm=False)``: ``if batch_norm == True:``) or
    ``if norm is not None:`` / ``!= None``, each false for the default False/None."""
    if isinstance(test, ast.Name):
        return test.id
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name):
        op, right = test.ops[0], test.comparators[0]
        if not isinstance(right, ast.Constant):
            return None
        if isinstance(op, (ast.Eq, ast.Is)) and right.value is True:
            return test.left.id
        if isinstance(op, (ast.NotEq, ast.IsNot)) and right.value is None:
            return test.left.id
    return None


# A configuration option a layer is built only under: ``(option key, the constant it is compared
# with or UNKNOWN for a truth test, ==, negated, the layer in the test's branch that holds)``.
OptionSwitch = tuple[str, object, bool, bool, bool]


def option_switches(ctx: FileContext, node: ast.AST) -> tuple[OptionSwitch, ...]:
    """The configuration options ``node`` is built only under, innermost first: a test of a config
    attribute (``if opt.use_bn:``) or of an instance attribute the class sets once from one
    (captioning models' ``self.use_bn = args.use_bn``, then ``(nn.BatchNorm1d(d),) if self.use_bn
    else ()``). Whether the layer is built on the run's path is then the options' defaults
    (:func:`option_switch_builds`); a parameter of the def is :func:`off_switch`'s."""
    fn = ctx.enclosing_function(node)
    if fn is None:
        return ()
    found: list[OptionSwitch] = []
    child, cur = node, ctx.parents.get(node)
    while cur is not None and cur is not fn:
        if isinstance(cur, (ast.IfExp, ast.If)) and child is not cur.test:
            in_body = child is cur.body if isinstance(cur, ast.IfExp) else child in cur.body
            # the ``else`` of ``a and b`` runs when either fails: no reading of one option
            conjunction = isinstance(cur.test, ast.BoolOp)
            switch = _option_test(ctx, fn, cur.test) if in_body or not conjunction else None
            if switch is not None:
                found.append((*switch, in_body))
        child, cur = cur, ctx.parents.get(cur)
    return tuple(found)


# The value of a norm selector read from a configuration option (``norm_option_selector``): the call
# builds the callee's BatchNorm when the option's default names BatchNorm (``PICKS_BATCHNORM``).
NAMES_BATCHNORM = "<a BatchNorm name>"


def option_switch_builds(switch: OptionSwitch, default: object) -> bool:
    """Whether the branch ``switch`` guards runs when its option has value ``default``."""
    _, value, equal, negated, in_body = switch
    if value is NAMES_BATCHNORM:  # a norm named by the option: anything but another norm's name builds
        return not isinstance(default, str) or bool(PICKS_BATCHNORM.match(default))
    holds = bool(default) if value is UNKNOWN else (default == value) == equal
    if negated and value is UNKNOWN:
        holds = not holds
    return holds == in_body


def _option_test(ctx: FileContext, fn: ast.AST, test: ast.expr) -> tuple[str, object, bool, bool] | None:
    found = flag_test(ctx, test, {})
    if found is None or "." not in found.flag:
        return None
    head, _, attr = found.flag.partition(".")
    key: str | None = found.flag.rsplit(".", 1)[-1]
    if head == "self":
        # an instance attribute is an option only where the class reads it from one; a constructor
        # parameter kept as ``self.bn = bn`` is decided by its callers (``off_switch``), not here
        key = _config_attribute(ctx, fn, attr) if "." not in attr else _config_object_key(ctx, fn, attr)
    return (key, found.value, found.equal, found.negated) if key else None


def _config_object_key(ctx: FileContext, fn: ast.AST, attr: str) -> str | None:
    """``opt.norm`` → ``norm`` where the class keeps a whole options object as ``self.opt``, set once
    from a name (PIFu-style filters: ``self.opt = opt`` then ``if self.opt.norm == 'batch':``): the
    option is the object's attribute, as ``opt.norm`` read directly is."""
    holder, _, key = attr.partition(".")
    cls = ctx.method_owner(fn)
    if cls is None or "." in key or not key:
        return None
    values = [
        n.value
        for n in ast.walk(cls)
        if isinstance(n, ast.Assign) and any(dotted(t) == f"self.{holder}" for t in n.targets)
    ]
    return key if len(values) == 1 and isinstance(values[0], ast.Name) else None


def norm_option_selector(ctx: FileContext, call: ast.Call) -> OptionSwitch | None:
    """A norm selector the call hands from a configuration option (PIFu-style ``ConvBlock(64, 128,
    self.opt.norm)``, ``Net(norm_layer=args.norm)``): a keyword named as a norm selector, or an
    argument read from an option so named. Its callee builds BatchNorm where the option's default
    names it (``NAMES_BATCHNORM``); a literal name is :func:`chooses_other_norm`'s."""
    fn = ctx.enclosing_function(call)
    if fn is None:
        return None
    given = [(None, a) for a in call.args] + [(k.arg, k.value) for k in call.keywords if k.arg is not None]
    for name, value in given:
        spelled = dotted(value) if isinstance(value, ast.Attribute) else None
        if spelled is None or "." not in spelled:
            continue
        if not NORM_SELECTOR.search(name or spelled.rsplit(".", 1)[-1]):
            continue
        head, _, attr = spelled.partition(".")
        if head != "self":
            key: str | None = spelled.rsplit(".", 1)[-1]
        else:
            key = _config_attribute(ctx, fn, attr) if "." not in attr else _config_object_key(ctx, fn, attr)
        if key:
            return (key, NAMES_BATCHNORM, True, False, True)
    return None


def _config_attribute(ctx: FileContext, fn: ast.AST, attr: str) -> str | None:
    """The option ``self.<attr>`` is set from, where the class sets it once, from a config attribute
    or key (``self.use_bn = args.use_bn`` → ``use_bn``, ``self.bn = cfg['batch_norm']`` → ``batch_norm``)."""
    cls = ctx.method_owner(fn)
    if cls is None:
        return None
    values = [
        n.value
        for n in ast.walk(cls)
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        and any(
            isinstance(t, ast.Attribute) and t.attr == attr and dotted(t) == f"self.{attr}"
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        )
    ]
    if len(values) != 1:
        return None
    value = values[0]
    if isinstance(value, ast.Attribute) and not (dotted(value) or "self.").startswith("self."):
        return value.attr
    if (
        isinstance(value, ast.Subscript)
        and isinstance(value.slice, ast.Constant)
        and isinstance(value.slice.value, str)
    ):
        return value.slice.value
    return None


def type_chosen_slot(ctx: FileContext, call: ast.Call) -> int | None:
    """The line of the ``if`` that picks, by the type of a parameter, which of two calls fills one
    attribute (OpenAI CLIP's ``if isinstance(vision_layers, (tuple, list)): self.visual =
    ModifiedResNet(...)`` / ``else: self.visual = VisionTransformer(...)``) where ``call`` is one of
    the two; None otherwise. The argument's type is known only at run time (CLIP's comes from the
    checkpoint or a configuration), so the two are candidates of a pick (the majority rule)."""
    assign = ctx.parents.get(call)
    if not (isinstance(assign, ast.Assign) and assign.value is call and len(assign.targets) == 1):
        return None
    slot = dotted(assign.targets[0])
    choice = ctx.parents.get(assign)
    fn = ctx.enclosing_function(call)
    if (
        slot is None
        or not slot.startswith("self.")
        or not isinstance(choice, ast.If)
        or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        or not _type_test_of_parameter(choice.test, fn)
    ):
        return None
    other = choice.orelse if assign in choice.body else choice.body
    filled = [
        b
        for b in other
        if isinstance(b, ast.Assign)
        and isinstance(b.value, ast.Call)
        and len(b.targets) == 1
        and dotted(b.targets[0]) == slot
    ]
    return choice.lineno if filled else None


def _type_test_of_parameter(test: ast.expr, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``isinstance(p, ...)`` (or its negation) of a parameter ``p`` of ``fn``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    params = set(parameter_names(fn))
    return (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
        and isinstance(test.args[0], ast.Name)
        and test.args[0].id in params
    )


def layer_switch(
    ctx: FileContext, layer: ast.AST
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, tuple[str, int]] | None:
    """The def ``layer`` is built in and ``(parameter, position)`` of the off-by-default parameter it
    is built only under (:func:`off_switch`; position among what a call fills, -1: keyword only),
    the form :func:`passes_switch` reads; None when it is built unconditionally."""
    name = off_switch(ctx, layer)
    fn = ctx.enclosing_function(layer)
    if name is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = positional_params(fn, bound=isinstance(ctx.parents.get(fn), ast.ClassDef))
    return fn, (name, params.index(name) if name in params else -1)


def passes_switch(calls: list[tuple[int, frozenset[str], bool]], switch: tuple[str, int] | None) -> bool:
    """Some call (``(positional count, keywords given a value other than False/None, has *args or
    **kwargs)``) may turn on parameter ``switch`` (``(name, position)``; position -1: keyword only;
    None: there is no switch to turn on)."""
    if switch is None:
        return False
    name, position = switch
    return any(star or name in kws or 0 <= position < npos for npos, kws, star in calls)


def call_shape(call: ast.Call) -> tuple[int, frozenset[str], bool]:
    """What a call hands its callee, as :func:`passes_switch` reads it."""
    star = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
    kws = frozenset(
        k.arg
        for k in call.keywords
        if k.arg is not None and not (isinstance(k.value, ast.Constant) and k.value.value in (False, None))
    )
    return len(call.args), kws, star


# A norm-layer selector argument (``norm_fn='instance'``, ``norm_layer="group"``, ``norm_cfg=dict(type="GN")``)
# and the values of it that pick BatchNorm.
NORM_SELECTOR = re.compile(r"^norm(_?(fn|layer|type|cfg|kind|mode))?$|_norm$", re.IGNORECASE)
PICKS_BATCHNORM = re.compile(r"^(sync_?)?(bn|batch|batch_?norm)([123]d)?$", re.IGNORECASE)


def chooses_other_norm(call: ast.Call) -> bool:
    """A call that names, by a norm-selector keyword, a norm layer other than BatchNorm (DROID-SLAM,
    RAFT ``BasicEncoder(output_dim=128, norm_fn='instance')``): the callee's BatchNorm, built only
    when that selector picks it, is not built by this call."""
    for kw in call.keywords:
        if kw.arg is None or not NORM_SELECTOR.search(kw.arg):
            continue
        value = _config_type(kw.value)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return not PICKS_BATCHNORM.match(value.value)
    return False


def _config_type(value: ast.AST) -> ast.AST | None:
    """The ``type`` of a config dict (``dict(type="GN")``, ``{"type": "GN"}``); the value itself
    when it is no dict."""
    if isinstance(value, ast.Call) and (dotted(value.func) or "") == "dict":  # dict(type="GN")
        return next((k.value for k in value.keywords if k.arg == "type"), None)
    if isinstance(value, ast.Dict):  # {"type": "GN"}
        return next(
            (
                v
                for k, v in zip(value.keys, value.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == "type"
            ),
            None,
        )
    return value


# OpenMMLab's norm layers are built from a config dict: ``build_norm_layer(norm_cfg, channels)``, or
# a block handed ``norm_cfg`` (``ConvModule(..., norm_cfg=norm_cfg)``); type ``BN``/``BN2d`` is
# ``nn.BatchNorm2d`` (``SyncBN`` the synchronised one). Copied mmcv-style backbones default their
# ``norm_cfg`` parameter to ``dict(type='BN')``.
MMCV_NORM_BUILDER = re.compile(
    r"^(mmcv|mmengine|mmdet|mmseg|mmcls|mmpretrain|mmdet3d)(\.\w+)*\.build_norm_layer$"
)
MMCV_NORM_BLOCK = re.compile(r"^mmcv(\.\w+)*\.(ConvModule|DepthwiseSeparableConvModule)$")
MMCV_BATCHNORM = frozenset({"BN", "BN1d", "BN2d", "BN3d"})


def mmcv_batchnorm(ctx: FileContext, call: ast.Call) -> bool:
    """``build_norm_layer(cfg, c)`` / ``ConvModule(..., norm_cfg=cfg)`` of mmcv where ``cfg`` is a
    BatchNorm config: written there, or the default of the def's parameter it comes from (also
    through ``copy.deepcopy`` and a ``self.norm_cfg`` the class's ``__init__`` keeps)."""
    q = ctx.call_qualname(call) or ""
    if MMCV_NORM_BUILDER.match(q):
        cfg = call.args[0] if call.args else keyword(call, "cfg")
    elif MMCV_NORM_BLOCK.match(q):
        cfg = keyword(call, "norm_cfg")
    else:
        return False
    return cfg is not None and _batchnorm_config(ctx, cfg, 4)


def _batchnorm_config(ctx: FileContext, node: ast.AST, hops: int) -> bool:
    kind = _config_type(node)
    if kind is not node or isinstance(node, ast.Constant):
        return isinstance(kind, ast.Constant) and kind.value in MMCV_BATCHNORM
    if hops == 0:
        return False
    if (
        isinstance(node, ast.Call)
        and node.args
        and (dotted(node.func) or "") in ("copy.deepcopy", "deepcopy")
    ):
        return _batchnorm_config(ctx, node.args[0], hops - 1)  # norm_cfg = copy.deepcopy(norm_cfg)
    fn = ctx.enclosing_function(node)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if isinstance(node, ast.Name):
        bound = [
            b
            for b in ctx.bindings(fn).get(node.id, [])
            if b.lineno < node.lineno and isinstance(b, ast.Assign)
        ]
        if bound:
            return _batchnorm_config(ctx, bound[-1].value, hops - 1)
        default = param_defaults(fn).get(node.id)
        return default is not None and _batchnorm_config(ctx, default, hops - 1)
    held = dotted(node) if isinstance(node, ast.Attribute) else None
    owner = ctx.method_owner(fn)
    if held is None or not held.startswith("self.") or held.count(".") != 1 or owner is None:
        return False
    init = init_of(owner)
    if init is None:
        return False
    # ``self.norm_cfg = norm_cfg`` kept once by the constructor
    kept = [
        n.value
        for n in ast.walk(init)
        if isinstance(n, ast.Assign) and any(dotted(t) == held for t in n.targets)
    ]
    return len(kept) == 1 and _batchnorm_config(ctx, kept[0], hops - 1)


def picked_by_name(func: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """``(registry, key)`` of a callee picked by name: ``registry.__dict__[key]`` or ``getattr(registry,
    key)`` (``models.__dict__[args.arch](...)``, ``getattr(torchvision.models, name)(...)``)."""
    if (
        isinstance(func, ast.Subscript)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "__dict__"
    ):
        return func.value.value, func.slice
    if (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and len(func.args) >= 2
    ):
        return func.args[0], func.args[1]
    return None


def library_batchnorm(ctx: FileContext, call: ast.Call) -> bool:
    """``call`` builds a library model whose default holds BatchNorm: a constructor of ``LIBRARY_BN``,
    or one loaded from torchvision's hub by a literal name (``torch.hub.load('pytorch/vision',
    'resnet50')``, also ``'pytorch/vision:v0.10.0'``)."""
    q = ctx.call_qualname(call) or ""
    if LIBRARY_BN.match(q):
        return True
    if TORCHVISION_BN_CLASS.match(q):
        return keyword(call, "norm_layer") is None  # ``norm_layer=partial(nn.GroupNorm, 32)`` builds none
    if CONFORMER.match(q):
        # the Conformer convolution module normalises with BatchNorm1d: lucidrains' ``conformer``
        # unless ``causal=True`` (then Identity), torchaudio's unless ``use_group_norm=True``
        off = keyword(call, "causal") or keyword(call, "use_group_norm")
        return off is None or (isinstance(off, ast.Constant) and not off.value)
    if q.startswith("monai.networks.nets."):
        # MONAI's networks take their norm as an argument (``UNet(..., norm=Norm.BATCH)``,
        # ``DynUNet(..., norm_name="batch")``); their defaults are instance/group norm
        return any(
            k.arg in ("norm", "norm_name") and "batch" in ast.unparse(k.value).lower() for k in call.keywords
        )
    if q != "torch.hub.load" or len(call.args) < 2:
        return False
    repo, name = call.args[0], call.args[1]
    return (
        isinstance(repo, ast.Constant)
        and isinstance(repo.value, str)
        and repo.value.split(":")[0] == "pytorch/vision"
        and isinstance(name, ast.Constant)
        and isinstance(name.value, str)
        and bool(LIBRARY_BN.match(f"torchvision.models.{name.value}"))
    )


def factory_name(ctx: FileContext, call: ast.Call) -> bool | tuple[str, int] | None:
    """A model factory call (``timm.create_model``) in a project def that builds a BatchNorm family:
    True for a literal name (cal-ql's ``timm.create_model('resnet18', features_only=True)``);
    ``(parameter, position)`` when the name is a parameter of the enclosing def, never rebound there,
    whose default is one (SlowTV's ``PoseNet.__init__(self, enc_name='resnet18')``, ACT's
    ``VisionBackbone(backbone_name='resnet18')``): BatchNorm on the default path, unless a call hands
    that parameter another literal name (:func:`names_other_model`). None otherwise (a ViT name, a
    name read from elsewhere: the file-level rule reads the flag defaults)."""
    if ctx.call_qualname(call) not in MODEL_FACTORIES:
        return None
    arg = call.args[0] if call.args else keyword(call, "model_name")
    if isinstance(arg, ast.Constant):
        return isinstance(arg.value, str) and bool(BATCHNORM_ARCH.match(arg.value)) or None
    fn = ctx.enclosing_function(call)
    if not isinstance(arg, ast.Name) or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    default = param_defaults(fn).get(arg.id)
    if not (
        isinstance(default, ast.Constant)
        and isinstance(default.value, str)
        and BATCHNORM_ARCH.match(default.value)
        and arg.id not in ctx.bindings(fn)
    ):
        return None
    params = positional_params(fn, bound=isinstance(ctx.parents.get(fn), ast.ClassDef))
    return arg.id, params.index(arg.id) if arg.id in params else -1


def names_other_model(call: ast.Call) -> frozenset[str]:
    """The parameters ``call`` hands a literal model name outside the BatchNorm families
    (``PoseNet(enc_name='convnext_base')``): by keyword its name, by position ``#i``; what
    :func:`factory_name`'s parameter is checked against."""

    def other(value: ast.expr) -> bool:
        return (
            isinstance(value, ast.Constant)
            and isinstance(value.value, str)
            and not BATCHNORM_ARCH.match(value.value)
        )

    given = {f"#{i}" for i, a in enumerate(call.args) if other(a)}
    return frozenset(given | {k.arg for k in call.keywords if k.arg is not None and other(k.value)})


def gives_other_model(given: list[frozenset[str]], param: tuple[str, int] | None) -> bool:
    """Every call (``names_other_model`` of each) hands factory parameter ``param`` another model
    name: what they build holds no BatchNorm from it. False without calls."""
    if param is None or not given:
        return False
    name, position = param
    return all(name in g or f"#{position}" in g for g in given)


def torchvision_pick(ctx: FileContext, call: ast.Call) -> bool:
    """``getattr(torchvision.models, name)(...)`` / ``torchvision.models.__dict__[name](...)``: a
    torchvision model picked by name, whose classification families are BatchNorm networks (ResNet,
    DenseNet, MobileNet, EfficientNet, RegNet, VGG-BN; a literal name must be one of them), unless the
    call hands its own ``norm_layer`` other than ``BatchNorm2d`` (DETR's backbone passes
    ``FrozenBatchNorm2d``, whose statistics are fixed)."""
    picked = picked_by_name(call.func)
    if picked is None or ctx.qualname(picked[0]) != "torchvision.models":
        return False
    name = picked[1]
    if isinstance(name, ast.Constant) and not (
        isinstance(name.value, str) and LIBRARY_BN.match(f"torchvision.models.{name.value}")
    ):
        return False
    norm = keyword(call, "norm_layer")
    return norm is None or (dotted(norm) or "").split(".")[-1] == "BatchNorm2d"


def builds_from_reference(ctx: FileContext, node: ast.AST) -> bool:
    """A BatchNorm class named without being called is built later when it is handed over as a
    layer type (``norm_layer=nn.BatchNorm2d``, ``Norm = nn.BatchNorm2d``, ``partial(nn.BatchNorm2d)``),
    not when it is inspected (``isinstance(m, (nn.BatchNorm2d, ...))``, ``type(m) == nn.BatchNorm2d``)
    or iterated (VAR ``for clz in (nn.Linear, nn.BatchNorm2d): ...`` patches the classes; also through
    ``zip``/``enumerate``: ``for bn, sync in zip([nn.BatchNorm2d], [SyncBN2d])``)."""
    child, cur = node, ctx.parents.get(node)
    while cur is not None and not isinstance(cur, ast.stmt):
        if isinstance(cur, ast.Compare):
            return False
        if isinstance(cur, ast.Call) and cur.func is not child:
            name = (dotted(cur.func) or "").split(".")[-1]
            if name not in ITERATION:
                return name not in INSPECTS
        if isinstance(cur, ast.comprehension) and child is cur.iter:
            return False
        child, cur = cur, ctx.parents.get(cur)
    return not (isinstance(cur, (ast.For, ast.AsyncFor)) and child is cur.iter)


def batchnorm_reference(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` names a BatchNorm class without calling it, to be built later (``norm_layer=
    nn.BatchNorm2d``, ``partial(nn.BatchNorm2d)``; ``builds_from_reference``); a called class is the
    call's."""
    parent = ctx.parents.get(node)
    return (
        bool(BATCHNORM.match(ctx.qualname(node) or ""))
        and not (isinstance(parent, ast.Call) and parent.func is node)
        and builds_from_reference(ctx, node)
    )


def batchnorm_tables(ctx: FileContext) -> set[str]:
    """Module-level tables of layer classes that hold a BatchNorm class (efficientvit
    ``REGISTERED_NORM_DICT = {"bn2d": nn.BatchNorm2d, "ln": nn.LayerNorm}``): a registry a function
    picks the norm layer from by name."""
    out: set[str] = set()
    for node in ctx.tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        value = getattr(node, "value", None)
        if not isinstance(target, ast.Name) or not isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
            continue
        items = value.values if isinstance(value, ast.Dict) else value.elts
        if any(BATCHNORM.match(ctx.qualname(v) or "") for v in items):
            out.add(target.id)
    return out


def freezes_batchnorm(ctx: FileContext, fn: ast.AST) -> bool:
    """``fn`` puts every BatchNorm layer of a model in eval mode (detection trainers' ``freeze_bn``:
    ``for m in self.modules(): if isinstance(m, nn.BatchNorm2d): m.eval()``, also a class-name test
    ``m.__class__.__name__.find('BatchNorm') != -1``): batch statistics are then never used. The loop
    runs whenever ``fn`` does (not under an ``if`` of its own) and every layer the test picks is put in
    eval mode: TDN's ``train()`` override freezes all but the first BatchNorm, and only when partial BN
    is on (``if self._enable_pbn and mode:``, ``if count >= 2: m.eval()``), so its first layer still
    trains on local statistics."""
    body = getattr(fn, "body", [])
    for loop in body:
        if not (
            isinstance(loop, ast.For)
            and isinstance(loop.target, ast.Name)
            and isinstance(loop.iter, ast.Call)
            and isinstance(loop.iter.func, ast.Attribute)
            and loop.iter.func.attr == "modules"
        ):
            continue
        layer = loop.target.id
        for test in ast.walk(loop):
            if (
                isinstance(test, ast.If)
                and "BatchNorm" in ctx.segment(test.test)
                and _evals(test.body, layer)
            ):
                return True
    return False


def _evals(body: list[ast.stmt], name: str) -> bool:
    """``name.eval()`` (or ``name.train(False)``) as one of these statements, not under a further test."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == name
        and (
            (n.func.attr == "eval" and not n.args)
            or (
                n.func.attr == "train"
                and len(n.args) == 1
                and isinstance(n.args[0], ast.Constant)
                and n.args[0].value is False
            )
        )
        for stmt in body
        if isinstance(stmt, ast.Expr)
        for n in (stmt.value,)
    )


def keeps_eval_mode(ctx: FileContext, cls: ast.ClassDef) -> bool:
    """The class overrides ``train`` to keep its BatchNorm layers in eval mode whatever mode it is
    asked for (Cutie's encoders: ``def train(self, mode=True): for module in self.children():
    module.train(False)``; a ``for m in self.modules(): if isinstance(m, nn.BatchNorm2d): m.eval()``
    after ``super().train(mode)``): its BatchNorm normalises with running statistics, also under DDP.
    Not a freeze under a switch of its own (OpenMMLab's ``if self.norm_eval and mode:``)."""
    train = next(
        (f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "train"),
        None,
    )
    if train is None:
        return False
    return freezes_batchnorm(ctx, train) or any(
        isinstance(loop, ast.For)
        and isinstance(loop.target, ast.Name)
        and isinstance(loop.iter, ast.Call)
        and isinstance(loop.iter.func, ast.Attribute)
        and loop.iter.func.attr in ("children", "modules")
        and isinstance(loop.iter.func.value, ast.Name)
        and loop.iter.func.value.id == "self"
        and _evals(loop.body, loop.target.id)
        for loop in train.body
    )
