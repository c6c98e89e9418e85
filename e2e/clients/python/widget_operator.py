"""A small kopf operator for the demo's Widgets: on create, update and resume it writes
status (observedGeneration and a Ready condition, what kstatus reads); on delete it lets go
of the Widget (kopf keeps its finalizer on it until then).

Run: kopf run --standalone --namespace demo widget_operator.py   (KUBECONFIG points at the proxy)
"""
import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    # Status through the status subresource; no peering (one operator, --standalone).
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage()
    settings.posting.enabled = False


@kopf.on.create("demo.stalemate.dev", "v1", "widgets")
@kopf.on.update("demo.stalemate.dev", "v1", "widgets")
@kopf.on.resume("demo.stalemate.dev", "v1", "widgets")
def reconcile(spec, meta, patch, logger, **_):
    size = int(spec.get("size", 0))
    patch.status["observedGeneration"] = meta["generation"]
    patch.status["size"] = size
    patch.status["conditions"] = [
        {"type": "Ready", "status": "True", "reason": "Reconciled", "message": f"size {size}"}
    ]
    logger.info("reconciled generation %s", meta["generation"])


@kopf.on.delete("demo.stalemate.dev", "v1", "widgets")
def release(meta, logger, **_):
    logger.info("released %s", meta["name"])
