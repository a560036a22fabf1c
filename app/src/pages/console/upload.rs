//! The share page's resource upload form (`pages/console/share.rs` shows
//! it under the resource list). Without JavaScript it is a plain multipart
//! post answered by a redirect (`server/src/routes/console/mod.rs`; both
//! word a refusal with `i18n::upload_refusal`); hydrated, the same form
//! goes by `XMLHttpRequest` to the JSON API and shows a progress bar.

use crate::i18n::Msg;
use leptos::prelude::*;
use uuid::Uuid;

use crate::i18n::{lang, t};

/// What the upload form reports while it runs (with JavaScript).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    not(feature = "hydrate"),
    expect(dead_code, reason = "only the browser's XHR upload moves past Idle")
)]
pub enum UploadState {
    Idle,
    /// Bytes sent of the whole request.
    Sending {
        sent: f64,
        total: f64,
    },
    Done(String),
    Failed(String),
}

/// The upload form. Without JavaScript it is a plain multipart post to
/// `/admin/t/{tenant}/s/{share}/upload`, answered by a redirect back to the
/// share's page with a message. With JavaScript it sends the same form to
/// the JSON API by XHR, which reports upload progress, and shows a progress
/// bar.
#[component]
pub fn Upload(
    tenant: Uuid,
    share: Uuid,
    uploaded: RwSignal<usize>,
    state: RwSignal<UploadState>,
) -> impl IntoView {
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        #[cfg(feature = "hydrate")]
        xhr::send(ev, share, state, uploaded);
        #[cfg(not(feature = "hydrate"))]
        let _ = (ev, uploaded);
    };
    let sending = move || matches!(state.get(), UploadState::Sending { .. });
    view! {
        <form method="post" enctype="multipart/form-data" class="form"
            action=format!("/admin/t/{tenant}/s/{share}/upload") on:submit=on_submit>
            <div class="field">
                <label for="upload-title">{t(Msg::Title)}</label>
                <input id="upload-title" name="title" maxlength="200"
                    placeholder=t(Msg::FromTheFileNameWhenEmpty)/>
            </div>
            <div class="field">
                <label for="upload-file">{t(Msg::FileVideoPageOrAnyFile)}</label>
                <input id="upload-file" name="file" type="file" required=true/>
            </div>
            <button type="submit" class="button secondary" disabled=sending>{t(Msg::Upload)}</button>
            {move || match state.get() {
                UploadState::Idle => ().into_any(),
                UploadState::Sending { sent, total } => {
                    let percent = if total > 0.0 { (sent / total * 100.0).floor() } else { 0.0 };
                    view! {
                        <div class="progress" role="status" data-testid="upload-progress">
                            <progress max="100" value=percent.to_string()></progress>
                            <span>{lang().format(Msg::Uploading, &[("percent", &percent)])}</span>
                        </div>
                    }.into_any()
                }
                UploadState::Done(message) => view! {
                    <p class="flash success" role="status">{message}</p>
                }.into_any(),
                UploadState::Failed(message) => view! {
                    <p class="flash error" role="alert">{message}</p>
                }.into_any(),
            }}
        </form>
    }
}

#[cfg(feature = "hydrate")]
mod xhr {
    //! The XHR upload (browser only): `fetch` cannot report upload
    //! progress, `XMLHttpRequest` can.
    use leptos::prelude::*;
    use uuid::Uuid;
    use wasm_bindgen::{JsCast as _, closure::Closure};

    use super::UploadState;
    use crate::i18n::{Msg, lang, t};

    pub fn send(
        ev: leptos::ev::SubmitEvent,
        share: Uuid,
        state: RwSignal<UploadState>,
        uploaded: RwSignal<usize>,
    ) {
        let Some(form) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlFormElement>().ok())
        else {
            return; // Let the browser post the form itself.
        };
        let (Ok(data), Ok(xhr)) = (
            web_sys::FormData::new_with_form(&form),
            web_sys::XmlHttpRequest::new(),
        ) else {
            return;
        };
        ev.prevent_default();
        if xhr
            .open("POST", &format!("/api/v1/shares/{share}/resources"))
            .is_err()
        {
            state.set(UploadState::Failed(t(Msg::UploadFailed).into()));
            return;
        }
        let _ = xhr.set_request_header("Accept", "application/json");
        let on_progress =
            Closure::<dyn FnMut(web_sys::ProgressEvent)>::new(move |e: web_sys::ProgressEvent| {
                if e.length_computable() {
                    state.set(UploadState::Sending {
                        sent: e.loaded(),
                        total: e.total(),
                    });
                }
            });
        if let Ok(upload) = xhr.upload() {
            upload.set_onprogress(Some(on_progress.as_ref().unchecked_ref()));
        }
        on_progress.forget();
        let answered = xhr.clone();
        let on_load = Closure::<dyn FnMut()>::new(move || {
            let status = answered.status().unwrap_or(0);
            let body = answered.response_text().ok().flatten().unwrap_or_default();
            let json: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            if status == 201 {
                let title = json["title"].as_str().unwrap_or_default().to_owned();
                state.set(UploadState::Done(
                    lang().format(Msg::Uploaded, &[("title", &title)]),
                ));
                form.reset();
                uploaded.update(|n| *n += 1);
            } else {
                state.set(UploadState::Failed(crate::i18n::upload_refusal(
                    lang(),
                    json["code"].as_str().unwrap_or_default(),
                    json["field"].as_str(),
                    json["detail"]
                        .as_str()
                        .unwrap_or("the server refused the file"),
                )));
            }
        });
        xhr.set_onload(Some(on_load.as_ref().unchecked_ref()));
        on_load.forget();
        let on_error = Closure::<dyn FnMut()>::new(move || {
            state.set(UploadState::Failed(
                t(Msg::UploadFailedTheConnectionWasLost).into(),
            ));
        });
        xhr.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();
        state.set(UploadState::Sending {
            sent: 0.0,
            total: 0.0,
        });
        if xhr.send_with_opt_form_data(Some(&data)).is_err() {
            state.set(UploadState::Failed(t(Msg::UploadFailed).into()));
        }
    }
}
