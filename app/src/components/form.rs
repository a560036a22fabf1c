//! Form error display shared by every form: a summary for errors about the
//! whole form, and a message under the field an error is about. Both are
//! announced to screen readers.

use leptos::prelude::*;

use crate::error::{AppError, sentence};

/// The error of a whole form (not tied to one field), if any.
#[component]
pub fn FormAlert(#[prop(into)] error: Signal<Option<AppError>>) -> impl IntoView {
    move || {
        error.get().filter(|e| !e.is_field_error()).map(|e| {
            view! {
                <div class="flash error" role="alert">{e.sentence()}</div>
            }
        })
    }
}

/// The message under field `field`, if the error is about it.
#[component]
pub fn FieldError(
    #[prop(into)] error: Signal<Option<AppError>>,
    field: &'static str,
) -> impl IntoView {
    let id = format!("{field}-error");
    move || {
        let id = id.clone();
        error
            .get()
            .and_then(|e| e.field_message(field))
            .map(|message| sentence(&message))
            .map(|message| view! { <p class="field-error" id=id role="alert">{message}</p> })
    }
}

/// `aria-invalid` for field `field`.
pub fn invalid(error: Signal<Option<AppError>>, field: &'static str) -> impl Fn() -> &'static str {
    move || {
        if error.get().and_then(|e| e.field_message(field)).is_some() {
            "true"
        } else {
            "false"
        }
    }
}

/// A labelled input with its hint and its error message, wired for screen
/// readers (`aria-invalid`, `aria-describedby`).
#[component]
pub fn Field(
    /// The form field (and server function argument) name; also the id.
    name: &'static str,
    label: &'static str,
    #[prop(into)] error: Signal<Option<AppError>>,
    #[prop(default = "text")] kind: &'static str,
    #[prop(default = "off")] autocomplete: &'static str,
    #[prop(optional)] hint: Option<&'static str>,
    #[prop(optional)] minlength: Option<u32>,
    #[prop(optional)] maxlength: Option<u32>,
    /// The browser insists on a value (most fields); `false` for an
    /// optional one.
    #[prop(default = true)]
    required: bool,
) -> impl IntoView {
    let hint_id = format!("{name}-hint");
    let described_by = match hint {
        Some(_) => format!("{hint_id} {name}-error"),
        None => format!("{name}-error"),
    };
    view! {
        <div class="field">
            <label for=name>{label}</label>
            <input
                id=name
                name=name
                type=kind
                autocomplete=autocomplete
                required=required
                minlength=minlength
                maxlength=maxlength
                aria-invalid=invalid(error, name)
                aria-describedby=described_by
            />
            {hint.map(|hint| view! { <p class="hint" id=hint_id>{hint}</p> })}
            <FieldError error field=name/>
        </div>
    }
}
