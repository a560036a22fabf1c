//! A share's page in the console (`/admin/t/{tenant}/s/{share}`): its
//! settings, resources (upload), code batches (issue, revoke unused).

use leptos::prelude::*;
use leptos_meta::Title;

use super::{ConsoleError, ConsoleNav, dashboard::OptionalField, param_id};
use crate::{
    admin::{
        DeleteResource, IssueCodes, MoveResource, RenameResource, RevokeUnused, ShareEditor,
        UpdateShare, share_settings,
    },
    components::form::{FieldError, FormAlert},
    error::AppError,
    learner::human_size,
};

#[component]
pub fn ShareAdminPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let share = param_id("share");
    let revoke = ServerAction::<RevokeUnused>::new();
    let update = ServerAction::<UpdateShare>::new();
    let actions = ResourceActions {
        rename: ServerAction::new(),
        moves: ServerAction::new(),
        delete: ServerAction::new(),
    };
    let data = Resource::new(
        move || {
            (
                tenant(),
                share(),
                revoke.version().get(),
                update.version().get(),
                actions.versions(),
            )
        },
        |(tenant, share, _, _, _)| async move {
            match (tenant, share) {
                (Some(t), Some(s)) => share_settings(t, s).await,
                _ => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                let here = format!(
                    "/admin/t/{}/s/{}",
                    tenant().map(|t| t.to_string()).unwrap_or_default(),
                    share().map(|s| s.to_string()).unwrap_or_default()
                );
                match data.await {
                    Ok(editor) => view! { <Editor editor revoke update actions/> }.into_any(),
                    Err(error) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Editor(
    editor: ShareEditor,
    revoke: ServerAction<RevokeUnused>,
    update: ServerAction<UpdateShare>,
    actions: ResourceActions,
) -> impl IntoView {
    let tenant = editor.tenant_id;
    let share = editor.id;
    let link = format!("/s/{}", editor.slug);
    view! {
        <Title text=editor.title.clone()/>
        <ConsoleNav tenant/>
        <h1>{editor.title.clone()}</h1>
        <p class="share-link">
            "Learners' link: "<a href=link.clone() id="share-link">{link.clone()}</a>" "
            <CopyButton path=link/>
            " · "<a href=format!("/admin/t/{tenant}/s/{share}/codes")>"Code table"</a>
            " · "<a href=format!("/admin/t/{tenant}/s/{share}/learners")>"Learners and records"</a>
        </p>
        <div class="console-grid">
            <Settings editor=editor.clone() action=update/>
            <div class="stack">
                <Resources tenant share resources=editor.resources.clone() actions/>
                <Codes tenant share batches=editor.batches.clone() revoke/>
            </div>
        </div>
    }
}

/// Copies the absolute link (needs the hydrated page; without JavaScript
/// the link next to it can be copied by hand).
#[component]
fn CopyButton(path: String) -> impl IntoView {
    let copied = RwSignal::new(false);
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        {
            let window = leptos::prelude::window();
            let origin = window.location().origin().unwrap_or_default();
            let _ = window
                .navigator()
                .clipboard()
                .write_text(&format!("{origin}{path}"));
            copied.set(true);
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = &path;
    };
    view! {
        <button type="button" class="link-button copy" on:click=copy>
            {move || if copied.get() { "Copied" } else { "Copy link" }}
        </button>
    }
}

#[component]
fn Settings(editor: ShareEditor, action: ServerAction<UpdateShare>) -> impl IntoView {
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    let status = editor.status.clone();
    let option = move |value: &'static str, label: &'static str| {
        view! { <option value=value selected=status == value>{label}</option> }
    };
    view! {
        <section class="card">
            <h2>"Settings"</h2>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <input type="hidden" name="tenant_id" value=editor.tenant_id.to_string()/>
                <input type="hidden" name="share_id" value=editor.id.to_string()/>
                <OptionalField name="title" label="Title" value=editor.title.clone() error/>
                <OptionalField name="slug" label="Link name" value=editor.slug.clone()
                    hint="Fixed once codes are issued: printed cards and sent links use it." error/>
                <div class="field">
                    <label for="description">"Description"</label>
                    <textarea id="description" name="description" rows="4" maxlength="10000">{editor.description.clone()}</textarea>
                    <FieldError error field="description"/>
                </div>
                <div class="field">
                    <label for="status">"Status"</label>
                    <select id="status" name="status">
                        {option("draft", "Draft: hidden from learners")}
                        {option("active", "Active")}
                        {option("paused", "Paused: nobody can open it")}
                        {option("archived", "Archived: gone for learners")}
                    </select>
                    <FieldError error field="status"/>
                </div>
                <div class="field-row">
                    <OptionalField name="valid_from" label="Opens (UTC)" kind="datetime-local" value=editor.valid_from.clone() error/>
                    <OptionalField name="valid_until" label="Closes (UTC)" kind="datetime-local" value=editor.valid_until.clone() error/>
                </div>
                <div class="field-row">
                    <OptionalField name="per_learner_limit" label="Accesses per learner" kind="number"
                        value=editor.per_learner_limit.clone() hint="Empty: unlimited." error/>
                    <OptionalField name="quota" label="Accesses in all" kind="number"
                        value=editor.quota.clone() hint=QUOTA_HINT error/>
                </div>
                <p class="hint">{format!("{} accesses counted so far.", editor.quota_used)}</p>
                <button type="submit" class="button" disabled=move || action.pending().get()>"Save"</button>
                <p class="saved" role="status">
                    {move || matches!(action.value().get(), Some(Ok(()))).then_some("Saved.")}
                </p>
            </ActionForm>
        </section>
    }
}

const QUOTA_HINT: &str = "Empty: unlimited. Counted once per learner per access window.";

/// The resource list's actions (one of each per page, so the list
/// refreshes after any of them).
#[derive(Clone, Copy)]
struct ResourceActions {
    rename: ServerAction<RenameResource>,
    moves: ServerAction<MoveResource>,
    delete: ServerAction<DeleteResource>,
}

impl ResourceActions {
    fn versions(&self) -> (usize, usize, usize) {
        (
            self.rename.version().get(),
            self.moves.version().get(),
            self.delete.version().get(),
        )
    }

    fn error(&self) -> Option<AppError> {
        self.delete
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| self.rename.value().get().and_then(Result::err))
            .or_else(|| self.moves.value().get().and_then(Result::err))
    }
}

#[component]
fn Resources(
    tenant: uuid::Uuid,
    share: uuid::Uuid,
    resources: Vec<crate::learner::ResourceItem>,
    actions: ResourceActions,
) -> impl IntoView {
    let error = Signal::derive(move || actions.error());
    let hidden = move |id: uuid::Uuid| {
        view! {
            <input type="hidden" name="tenant_id" value=tenant.to_string()/>
            <input type="hidden" name="share_id" value=share.to_string()/>
            <input type="hidden" name="resource_id" value=id.to_string()/>
        }
    };
    view! {
        <section class="card">
            <h2>"Resources"</h2>
            <FormAlert error/>
            <FieldError error field="force"/>
            {if resources.is_empty() {
                view! { <p class="muted">"Nothing uploaded yet."</p> }.into_any()
            } else {
                view! {
                    <ul class="resource-list admin-resources">
                        {resources.into_iter().map(|r| {
                            let up = format!("Move {} up", r.title);
                            let down = format!("Move {} down", r.title);
                            view! {
                            <li class="resource" data-resource=r.id.to_string()>
                                <span class="tag">{r.kind.clone()}</span>
                                <a class="resource-title" href=format!("/admin/t/{tenant}/s/{share}/r/{}/preview", r.id) target="_blank">{r.title.clone()}</a>
                                <span class="muted">{human_size(r.size_bytes)}</span>
                                <span class="resource-actions">
                                    <ActionForm action=actions.moves attr:class="inline-form">
                                        {hidden(r.id)}
                                        <input type="hidden" name="direction" value="up"/>
                                        <button type="submit" class="link-button" aria-label=up>"↑"</button>
                                    </ActionForm>
                                    <ActionForm action=actions.moves attr:class="inline-form">
                                        {hidden(r.id)}
                                        <input type="hidden" name="direction" value="down"/>
                                        <button type="submit" class="link-button" aria-label=down>"↓"</button>
                                    </ActionForm>
                                    <details class="resource-edit">
                                        <summary>"Rename or remove"</summary>
                                        <ActionForm action=actions.rename attr:class="form compact">
                                            {hidden(r.id)}
                                            <label for=format!("rename-{}", r.id)>"New title"</label>
                                            <input id=format!("rename-{}", r.id) name="title" value=r.title.clone() required=true maxlength="200"/>
                                            <button type="submit" class="button small secondary">"Rename"</button>
                                        </ActionForm>
                                        <ActionForm action=actions.delete attr:class="form compact">
                                            {hidden(r.id)}
                                            <label class="check">
                                                <input type="checkbox" name="force" value="on"/>
                                                " remove anyway, even if learners opened it"
                                            </label>
                                            <button type="submit" class="button small danger">"Remove"</button>
                                        </ActionForm>
                                    </details>
                                </span>
                            </li>
                        }}).collect_view()}
                    </ul>
                }.into_any()
            }}
            <form method="post" enctype="multipart/form-data" class="form"
                action=format!("/admin/t/{tenant}/s/{share}/upload")>
                <div class="field">
                    <label for="upload-title">"Title"</label>
                    <input id="upload-title" name="title" maxlength="200" placeholder="From the file name when empty"/>
                </div>
                <div class="field">
                    <label for="upload-file">"File (video, page or any file)"</label>
                    <input id="upload-file" name="file" type="file" required=true/>
                </div>
                <button type="submit" class="button secondary">"Upload"</button>
            </form>
        </section>
    }
}

#[component]
fn Codes(
    tenant: uuid::Uuid,
    share: uuid::Uuid,
    batches: Vec<crate::admin::BatchView>,
    revoke: ServerAction<RevokeUnused>,
) -> impl IntoView {
    let issue = ServerAction::<IssueCodes>::new();
    let error = Signal::derive(move || issue.value().get().and_then(Result::err));
    let revoke_error = Signal::derive(move || revoke.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>"Access codes"</h2>
            <FormAlert error/>
            <ActionForm action=issue attr:class="form">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <input type="hidden" name="share_id" value=share.to_string()/>
                <div class="field-row">
                    <OptionalField name="count" label="How many" kind="number" value="20" error/>
                    <OptionalField name="label" label="Label" hint="E.g. the class or the shop order." error/>
                </div>
                <p class="hint">"The codes are shown once, on the next page, with a CSV download. Afterwards only hints remain."</p>
                <button type="submit" class="button" disabled=move || issue.pending().get()>
                    {move || if issue.pending().get() { "Issuing…" } else { "Issue codes" }}
                </button>
            </ActionForm>
            <FormAlert error=revoke_error/>
            {(!batches.is_empty()).then(|| view! {
                <h3>"Batches"</h3>
                <ul class="batch-list">
                    {batches.into_iter().map(|b| view! {
                        <li>
                            <a href=format!("/admin/t/{tenant}/s/{share}/codes?batch={}", b.id)>
                                {if b.label.is_empty() { "(no label)".to_owned() } else { b.label.clone() }}
                            </a>
                            <span class="muted">{format!(" · {} codes · {}", b.count, b.created)}</span>
                            <ActionForm action=revoke attr:class="inline-form">
                                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                <input type="hidden" name="batch_id" value=b.id.to_string()/>
                                <button type="submit" class="link-button danger-link">"Revoke unused"</button>
                            </ActionForm>
                        </li>
                    }).collect_view()}
                </ul>
            })}
        </section>
    }
}
