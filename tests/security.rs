//! Platform-team controls: allowed images, restricted override annotations (with a namespace
//! exemption label), and no root proxy.

mod common;

use common::namespace;
use linkerd_injector_policy::outcome::Verdict;
use linkerd_injector_policy::owner::Owner;
use linkerd_injector_policy::settings::Settings;
use rstest::rstest;
use serde_json::{Value, json};

fn settings(policy: Value) -> Settings {
    Settings::from_value(json!({"identityTrustAnchorsPEM": "PEM", "linkerdVersion": "v1", "policy": policy}))
        .unwrap()
}

fn pod(annotations: Value) -> Value {
    let mut a = json!({"linkerd.io/inject": "enabled"});
    a.as_object_mut()
        .unwrap()
        .extend(annotations.as_object().unwrap().clone());
    json!({"metadata": {"name": "p", "annotations": a}, "spec": {"containers": [{"name": "app"}]}})
}

fn verdict(s: &Settings, p: &Value, ns_labels: Value, ns_ann: Value) -> Verdict {
    let mut ns = namespace("shop", ns_ann);
    ns["metadata"]["labels"] = ns_labels;
    common::admit("Pod", p, "shop", s, &common::cluster(vec![ns])).verdict
}

fn rejected(msg: &str) -> Verdict {
    Verdict::Rejected(msg.into())
}

/// The verdict for [`pod`]: injected, the bare pod its own owner.
fn injected() -> Verdict {
    Verdict::Injected {
        owner: Owner {
            kind: "pod".into(),
            name: "p".into(),
        },
    }
}

/// The rejection of a proxy image set by the pod's `config.linkerd.io/proxy-image`.
fn image_rejected(image: &str) -> Verdict {
    rejected(&format!(
        "image \"{image}\" (annotation config.linkerd.io/proxy-image) is not allowed by settings.policy.allowedImages"
    ))
}

#[rstest]
#[case::default_image_allowed(json!({}), injected())]
#[case::other_registry(json!({"config.linkerd.io/proxy-image": "evil.io/proxy"}), image_rejected("evil.io/proxy:v1"))]
#[case::lookalike_repository(
    json!({"config.linkerd.io/proxy-image": "cr.l5d.io/linkerd/proxy-evil"}),
    image_rejected("cr.l5d.io/linkerd/proxy-evil:v1")
)]
#[case::version_only(json!({"config.linkerd.io/proxy-version": "edge-1"}), injected())]
#[case::mirror_allowed(json!({"config.linkerd.io/proxy-image": "mirror.example/linkerd/proxy"}), injected())]
fn allowed_images(#[case] annotations: Value, #[case] expected: Verdict) {
    let s = settings(json!({"allowedImages": ["cr.l5d.io/linkerd/proxy", "mirror.example/linkerd/proxy"]}));
    let v = verdict(&s, &pod(annotations.clone()), json!({}), json!({}));
    assert_eq!(v, expected, "{annotations}");
}

#[test]
fn image_rejection_names_the_annotation() {
    let s = settings(json!({"allowedImages": ["cr.l5d.io/linkerd/"]}));
    let p = pod(json!({"config.linkerd.io/proxy-image": "evil.io/proxy"}));
    assert_eq!(
        verdict(&s, &p, json!({}), json!({})),
        rejected(
            "image \"evil.io/proxy:v1\" (annotation config.linkerd.io/proxy-image) is not allowed by settings.policy.allowedImages"
        )
    );
    let debug = pod(
        json!({"config.linkerd.io/enable-debug-sidecar": "true", "config.linkerd.io/debug-image": "evil.io/debug"}),
    );
    assert_eq!(
        verdict(&s, &debug, json!({}), json!({})),
        rejected(
            "image \"evil.io/debug:v1\" (annotation config.linkerd.io/debug-image) is not allowed by settings.policy.allowedImages"
        )
    );
    let from_ns = pod(json!({}));
    assert_eq!(
        verdict(
            &s,
            &from_ns,
            json!({}),
            json!({"config.linkerd.io/proxy-image": "evil.io/p"})
        ),
        rejected(
            "image \"evil.io/p:v1\" (annotation config.linkerd.io/proxy-image on namespace shop) is not allowed by settings.policy.allowedImages"
        )
    );
}

#[test]
fn restricted_annotations_and_the_exempt_label() {
    let s = settings(json!({
        "restrictedAnnotations": ["config.linkerd.io/skip-outbound-ports", "config.linkerd.io/enable-debug-sidecar"],
        "restrictedAnnotationsExemptLabel": "mesh.example/overrides=allowed"
    }));
    let p = pod(json!({"config.linkerd.io/skip-outbound-ports": "443"}));
    let restricted = rejected(
        "annotation config.linkerd.io/skip-outbound-ports: pod authors may not set it in namespace shop (settings.policy.restrictedAnnotations)",
    );
    assert_eq!(verdict(&s, &p, json!({}), json!({})), restricted);
    assert_eq!(
        verdict(&s, &p, json!({"mesh.example/overrides": "allowed"}), json!({})),
        injected()
    );
    // The label's value must match, not only its key.
    assert_eq!(
        verdict(&s, &p, json!({"mesh.example/overrides": "no"}), json!({})),
        restricted
    );
    // The namespace owner may still set it for the whole namespace.
    let plain = pod(json!({}));
    assert_eq!(
        verdict(
            &s,
            &plain,
            json!({}),
            json!({"config.linkerd.io/skip-outbound-ports": "443"})
        ),
        injected()
    );
}

#[test]
fn root_proxy_is_refused_unless_allowed() {
    let p = pod(json!({"config.linkerd.io/proxy-uid": "0"}));
    assert_eq!(
        verdict(&settings(json!({})), &p, json!({}), json!({})),
        rejected(
            "annotation config.linkerd.io/proxy-uid: the proxy may not run as uid 0 (settings.policy.allowRootProxy is false)"
        )
    );
    assert_eq!(
        verdict(
            &settings(json!({"allowRootProxy": true})),
            &p,
            json!({}),
            json!({})
        ),
        injected()
    );
}

#[rstest]
#[case::uid_zero(json!({"proxy": {"uid": 0}}), "settings.proxy.uid: must not be 0 unless policy.allowRootProxy is true")]
#[case::bad_restricted_key(json!({"policy": {"restrictedAnnotations": ["linkerd.io/inject"]}}), "settings.policy.restrictedAnnotations[0]: must be a config.linkerd.io/* override annotation, got \"linkerd.io/inject\"")]
#[case::empty_prefix(json!({"policy": {"allowedImages": [""]}}), "settings.policy.allowedImages[0]: must not be empty")]
#[case::default_image_outside(json!({"policy": {"allowedImages": ["registry.internal/"]}}), "settings.proxy.image.name: image \"cr.l5d.io/linkerd/proxy\" is not under policy.allowedImages")]
fn invalid_security_settings(#[case] s: Value, #[case] msg: &str) {
    let err = Settings::from_value(s).unwrap_err().to_string();
    assert!(err.starts_with(msg), "{err}");
}

#[test]
fn namespace_labels_are_only_read_when_needed() {
    let c = common::cluster(vec![namespace("shop", json!({}))]);
    common::admit("Pod", &pod(json!({})), "shop", &settings(json!({})), &c);
    assert_eq!(c.lookups()[0].field_masks, ["metadata.annotations"]);
    let s = settings(json!({"restrictedAnnotationsExemptLabel": "k"}));
    let c = common::cluster(vec![namespace("shop", json!({}))]);
    common::admit("Pod", &pod(json!({})), "shop", &s, &c);
    assert_eq!(
        c.lookups()[0].field_masks,
        ["metadata.annotations", "metadata.labels"]
    );
}
