//! The landing page: what AdmitOne is, for creators and for learners.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::i18n::t;

#[component]
pub fn HomePage() -> impl IntoView {
    view! {
        <Title text=""/>
        <section class="hero">
            <h1>{t("Sell a course to exactly the people you meant.", "课程只卖给你想卖的人。")}</h1>
            <p class="lead">
                {t(
                    "Publish a course once, hand out one access code per learner. \
                     The first time a learner opens the course, their code is bound to their \
                     account for good: one person, one code.",
                    "课程发布一次，每位学员发一个兑换码。\
                     学员第一次打开课程时，兑换码即永久绑定到其账号：一人一码。",
                )}
            </p>
        </section>
        <section class="cards">
            <article class="card">
                <h2>{t("For course creators", "课程创作者")}</h2>
                <p>
                    {t(
                        "Create a share, upload videos, files and pages, issue a batch of codes \
                         and see who redeemed which one.",
                        "创建课程分享，上传视频、文件和页面，批量生成兑换码，\
                         谁兑换了哪个码一目了然。",
                    )}
                </p>
            </article>
            <article class="card">
                <h2>{t("For learners", "学员")}</h2>
                <p>
                    {t(
                        "Open the link you were given, sign in, enter your code once. \
                         Come back from any device without it.",
                        "打开收到的链接，登录后输入一次兑换码即可。\
                         之后在任何设备上都无需再次输入。",
                    )}
                </p>
            </article>
        </section>
    }
}
