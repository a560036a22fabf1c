//! A share's page in the console (`/admin/t/{tenant}/s/{share}`): its
//! settings, resources (the upload form is in `upload.rs`), code batches
//! (issue, revoke unused).

use leptos::prelude::*;
use leptos_meta::Title;
use model::ShareStatus;
use uuid::Uuid;

use super::{
    ConsoleError, ConsoleNav,
    dashboard::OptionalField,
    param_id,
    upload::{Upload, UploadState},
};
use crate::{
    admin::{
        codes::RevokeUnused,
        issued::IssueCodes,
        share::{
            BatchView, DeleteResource, MoveResource, RenameResource, ShareEditor, UpdateShare,
            share_settings,
        },
    },
    components::form::{FieldError, FormAlert},
    error::AppError,
    i18n::{lang, resource_kind, t},
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
        uploaded: RwSignal::new(0),
        upload: RwSignal::new(UploadState::Idle),
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
        <Transition fallback=|| view! { <p>{t("Loading…", "加载中…")}</p> }>
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
            {t("Learners' link: ", "学员链接：")}<a href=link.clone() id="share-link">{link.clone()}</a>" "
            <CopyButton path=link/>
            " · "<a href=format!("/admin/t/{tenant}/s/{share}/codes")>{t("Code table", "兑换码列表")}</a>
            " · "<a href=format!("/admin/t/{tenant}/s/{share}/learners")>{t("Learners and records", "学员与访问记录")}</a>
        </p>
        {editor.read_only.then(|| view! {
            <p class="flash info read-only-note" role="status">{t(
                "You can look at this share but not change it (your role is support).",
                "你可以查看这个课程分享，但不能修改（你的角色是客服）。",
            )}</p>
        })}
        // Support reads the forms with everything in them disabled (the
        // server refuses their posts anyway).
        <fieldset class="bare" disabled=editor.read_only>
            // Type-erased: the whole editor as one type is too deep for the
            // compiler's layout queries.
            {view! {
                <div class="console-grid">
                    <Settings editor=editor.clone() action=update/>
                    <div class="stack">
                        <Resources tenant share resources=editor.resources.clone() actions/>
                        <Codes tenant share ticket=editor.issue_ticket batches=editor.batches.clone() revoke/>
                    </div>
                </div>
            }.into_any()}
        </fieldset>
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
            {move || if copied.get() { t("Copied", "已复制") } else { t("Copy link", "复制链接") }}
        </button>
    }
}

#[component]
fn Settings(editor: ShareEditor, action: ServerAction<UpdateShare>) -> impl IntoView {
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    let status = editor.status;
    let option = move |value: ShareStatus, label: &'static str| {
        view! { <option value=value.as_str() selected=status == value>{label}</option> }
    };
    view! {
        <section class="card">
            <h2>{t("Settings", "设置")}</h2>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <input type="hidden" name="tenant_id" value=editor.tenant_id.to_string()/>
                <input type="hidden" name="share_id" value=editor.id.to_string()/>
                <OptionalField name="title" label=t("Title", "标题") value=editor.title.clone() error/>
                <OptionalField name="slug" label=t("Link name", "链接名") value=editor.slug.clone()
                    hint=t(
                        "Fixed once codes are issued: printed cards and sent links use it.",
                        "生成兑换码后不能再改：已打印的卡片和已发出的链接都用它。",
                    ) error/>
                <div class="field">
                    <label for="description">{t("Description", "简介")}</label>
                    <textarea id="description" name="description" rows="4" maxlength="10000">{editor.description.clone()}</textarea>
                    <FieldError error field="description"/>
                </div>
                <div class="field">
                    <label for="status">{t("Status", "状态")}</label>
                    <select id="status" name="status">
                        {ShareStatus::ALL.iter().map(|&value| option(value, status_choice(value))).collect_view()}
                    </select>
                    <FieldError error field="status"/>
                </div>
                <div class="field-row">
                    <OptionalField name="valid_from" label=lang().pick(format!("Opens ({})", editor.time_zone), format!("开放时间（{}）", editor.time_zone)) kind="datetime-local" value=editor.valid_from.clone() error/>
                    <OptionalField name="valid_until" label=lang().pick(format!("Closes ({})", editor.time_zone), format!("结束时间（{}）", editor.time_zone)) kind="datetime-local" value=editor.valid_until.clone() error/>
                </div>
                <div class="field-row">
                    <OptionalField name="per_learner_limit" label=t("Accesses per learner", "每位学员访问次数") kind="number"
                        value=editor.per_learner_limit.clone() hint=t("Empty: unlimited.", "留空表示不限。") error/>
                    <OptionalField name="quota" label=t("Accesses in all", "总访问次数") kind="number"
                        value=editor.quota.clone() hint=t(
                            "Empty: unlimited. Counted once per learner per access window.",
                            "留空表示不限。每位学员在每个访问时段内计一次。",
                        ) error/>
                </div>
                <p class="hint">{lang().pick(
                    format!("{} accesses counted so far.", editor.quota_used),
                    format!("目前已计入 {} 次访问。", editor.quota_used),
                )}</p>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t("Save", "保存")}</button>
                <p class="saved" role="status">
                    {move || matches!(action.value().get(), Some(Ok(()))).then_some(t("Saved.", "已保存。"))}
                </p>
            </ActionForm>
        </section>
    }
}

/// The resource list's actions (one of each per page, so the list
/// refreshes after any of them).
#[derive(Clone, Copy)]
struct ResourceActions {
    rename: ServerAction<RenameResource>,
    moves: ServerAction<MoveResource>,
    delete: ServerAction<DeleteResource>,
    /// Bumped after each upload made in the page (with JavaScript).
    uploaded: RwSignal<usize>,
    /// The upload form's progress and result; kept here, above the list,
    /// so the message survives the list's refresh.
    upload: RwSignal<UploadState>,
}

impl ResourceActions {
    fn versions(&self) -> (usize, usize, usize, usize) {
        (
            self.rename.version().get(),
            self.moves.version().get(),
            self.delete.version().get(),
            self.uploaded.get(),
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
            <h2>{t("Resources", "资源")}</h2>
            <FormAlert error/>
            <FieldError error field="force"/>
            {if resources.is_empty() {
                view! { <p class="muted">{t("Nothing uploaded yet.", "还没有上传任何内容。")}</p> }.into_any()
            } else {
                view! {
                    <ul class="resource-list admin-resources">
                        {resources.into_iter().map(|r| {
                            let up = lang().pick(format!("Move {} up", r.title), format!("上移 {}", r.title));
                            let down = lang().pick(format!("Move {} down", r.title), format!("下移 {}", r.title));
                            view! {
                            <li class="resource" data-resource=r.id.to_string()>
                                <span class="tag">{resource_kind(r.kind)}</span>
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
                                        <summary>{t("Rename or remove", "改名或删除")}</summary>
                                        <ActionForm action=actions.rename attr:class="form compact">
                                            {hidden(r.id)}
                                            <label for=format!("rename-{}", r.id)>{t("New title", "新标题")}</label>
                                            <input id=format!("rename-{}", r.id) name="title" value=r.title.clone() required=true maxlength="200"/>
                                            <button type="submit" class="button small secondary">{t("Rename", "改名")}</button>
                                        </ActionForm>
                                        <ActionForm action=actions.delete attr:class="form compact">
                                            {hidden(r.id)}
                                            <label class="check">
                                                <input type="checkbox" name="force" value="on"/>
                                                {t(" remove anyway, even if learners opened it", " 仍然删除，即使学员已打开过")}
                                            </label>
                                            <button type="submit" class="button small danger">{t("Remove", "删除")}</button>
                                        </ActionForm>
                                    </details>
                                </span>
                            </li>
                        }}).collect_view()}
                    </ul>
                }.into_any()
            }}
            <Upload tenant share uploaded=actions.uploaded state=actions.upload/>
        </section>
    }
}

#[component]
fn Codes(
    tenant: uuid::Uuid,
    share: uuid::Uuid,
    ticket: uuid::Uuid,
    batches: Vec<BatchView>,
    revoke: ServerAction<RevokeUnused>,
) -> impl IntoView {
    let issue = ServerAction::<IssueCodes>::new();
    let error = Signal::derive(move || issue.value().get().and_then(Result::err));
    let progress = issue_progress_of(tenant, ticket, issue);
    let revoke_error = Signal::derive(move || revoke.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>{t("Access codes", "兑换码")}</h2>
            <FormAlert error/>
            <ActionForm action=issue attr:class="form">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <input type="hidden" name="share_id" value=share.to_string()/>
                <input type="hidden" name="ticket" value=ticket.to_string()/>
                <div class="field-row">
                    <OptionalField name="count" label=t("How many", "数量") kind="number" value="20" error/>
                    <OptionalField name="label" label=t("Label", "批次名称") hint=t("E.g. the class or the shop order.", "例如班级或店铺订单号。") error/>
                </div>
                <p class="hint">{t(
                    "The codes are shown once, on the next page, with a CSV download. Afterwards only hints remain.",
                    "兑换码只在下一页显示一次，并可下载一次 CSV。之后只保留提示（首尾各两位）。",
                )}</p>
                <button type="submit" class="button" disabled=move || issue.pending().get()>
                    {move || if issue.pending().get() { t("Issuing…", "生成中…") } else { t("Issue codes", "生成兑换码") }}
                </button>
                {move || issue.pending().get().then(|| {
                    let (done, total) = progress.get().unwrap_or((0, 0));
                    let text = if total == 0 {
                        t("Starting…", "准备中…").to_owned()
                    } else {
                        lang().pick(
                            format!("{} of {} codes written…", number_u64(done), number_u64(total)),
                            format!("已写入 {} / {} 个兑换码…", number_u64(done), number_u64(total)),
                        )
                    };
                    view! {
                        <div class="progress" role="status" data-testid="issue-progress">
                            <progress max=total.max(1).to_string() value=done.to_string()></progress>
                            <span>{text}</span>
                        </div>
                    }
                })}
            </ActionForm>
            <FormAlert error=revoke_error/>
            <FieldError error=revoke_error field="confirm"/>
            {(!batches.is_empty()).then(|| view! {
                <h3>{t("Batches", "批次")}</h3>
                <ul class="batch-list">
                    {batches.into_iter().map(|b| {
                        let batch_name = if b.label.is_empty() {
                            lang().pick(format!("(no label) {}", b.created), format!("（未命名）{}", b.created))
                        } else {
                            b.label.clone()
                        };
                        view! {
                        <li>
                            <a href=format!("/admin/t/{tenant}/s/{share}/codes?batch={}", b.id)>
                                {batch_name.clone()}
                            </a>
                            <span class="muted">{lang().pick(
                                format!(" · {} codes · {}", b.count, b.created),
                                format!(" · {} 个 · {}", b.count, b.created),
                            )}</span>
                            <details class="confirm-action">
                                <summary aria-label=lang().pick(
                                    format!("Revoke the unused codes of batch {}", batch_name),
                                    format!("作废批次 {} 中未用的码", batch_name),
                                )>{t("Revoke unused…", "作废未用的码…")}</summary>
                                <ActionForm action=revoke attr:class="form compact">
                                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                    <input type="hidden" name="batch_id" value=b.id.to_string()/>
                                    <label class="check">
                                        <input type="checkbox" name="confirm" value="yes" required=true/>
                                        {t(
                                            " I understand that this batch's unused codes can never be used again (bound ones keep working).",
                                            " 我明白这个批次中未使用的兑换码将永远不能再使用（已绑定的不受影响）。",
                                        )}
                                    </label>
                                    <button type="submit" class="button small danger">{t("Revoke unused", "作废未用的码")}</button>
                                </ActionForm>
                            </details>
                        </li>
                        }
                    }).collect_view()}
                </ul>
            })}
        </section>
    }
}

/// A number of codes with thousands separators.
fn number_u64(n: u64) -> String {
    crate::i18n::number(i64::try_from(n).unwrap_or(i64::MAX))
}

/// While `issue` runs, polls how many codes the server has written under
/// `ticket` (in the browser only; a page without JavaScript just waits for
/// the result page).
fn issue_progress_of(
    tenant: Uuid,
    ticket: Uuid,
    issue: ServerAction<IssueCodes>,
) -> ReadSignal<Option<(u64, u64)>> {
    let (progress, set_progress) = signal(None::<(u64, u64)>);
    #[cfg(feature = "hydrate")]
    Effect::new(move |previous: Option<Option<IntervalHandle>>| {
        if let Some(Some(handle)) = previous {
            handle.clear();
        }
        if !issue.pending().get() {
            set_progress.set(None);
            return None;
        }
        set_interval_with_handle(
            move || {
                leptos::task::spawn_local(async move {
                    if let Ok(Some(now)) =
                        crate::admin::issued::issue_progress(tenant, ticket).await
                        && issue.pending().get_untracked()
                    {
                        set_progress.set(Some(now));
                    }
                });
            },
            std::time::Duration::from_millis(250),
        )
        .ok()
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (tenant, ticket, issue, set_progress);
    progress
}

/// A status as the editor offers it: with what it means for learners.
fn status_choice(status: ShareStatus) -> &'static str {
    match status {
        ShareStatus::Draft => t("Draft: hidden from learners", "草稿：学员看不到"),
        ShareStatus::Active => t("Active", "开放中"),
        ShareStatus::Paused => t("Paused: nobody can open it", "已暂停：谁都打不开"),
        ShareStatus::Archived => t("Archived: gone for learners", "已归档：对学员下架"),
    }
}
